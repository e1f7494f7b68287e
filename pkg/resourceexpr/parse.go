package resourceexpr

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

type exprTokenKind int

const (
	tokEOF exprTokenKind = iota
	tokNumber
	tokQuantity
	tokIdent
	tokOp // one of + - * / ( ) ,
)

type exprToken struct {
	kind exprTokenKind
	pos  int
	text string
	val  *big.Rat // tokNumber and tokQuantity
}

func (t exprToken) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end"
	case tokOp:
		return fmt.Sprintf("%q", t.text)
	default:
		return t.text
	}
}

type exprLexer struct {
	src string
	pos int
}

func exprIsDigit(c byte) bool  { return c >= '0' && c <= '9' }
func exprIsLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func exprIsSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scan reads the next token.
func (l *exprLexer) scan() (exprToken, error) {
	for l.pos < len(l.src) && exprIsSpace(l.src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return exprToken{kind: tokEOF, pos: start}, nil
	}
	c := l.src[l.pos]
	switch {
	case strings.IndexByte("+-*/(),", c) >= 0:
		l.pos++
		return exprToken{kind: tokOp, pos: start, text: string(c)}, nil
	case exprIsDigit(c) || c == '.':
		return l.scanNumber()
	case exprIsLetter(c) || c == '_':
		for l.pos < len(l.src) && (exprIsLetter(l.src[l.pos]) || exprIsDigit(l.src[l.pos]) || l.src[l.pos] == '_') {
			l.pos++
		}
		return exprToken{kind: tokIdent, pos: start, text: l.src[start:l.pos]}, nil
	default:
		return exprToken{}, &Error{Pos: start, Msg: fmt.Sprintf("unexpected character %q", l.src[start:start+exprRuneLen(l.src[start:])])}
	}
}

func exprRuneLen(s string) int {
	for i := range s {
		if i > 0 {
			return i
		}
	}
	return len(s)
}

// scanNumber reads a number (digits, a fraction, an exponent), then either % or a quantity suffix.
func (l *exprLexer) scanNumber() (exprToken, error) {
	start := l.pos
	digits := 0
	for l.pos < len(l.src) && exprIsDigit(l.src[l.pos]) {
		l.pos++
		digits++
	}
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		for l.pos < len(l.src) && exprIsDigit(l.src[l.pos]) {
			l.pos++
			digits++
		}
	}
	if digits == 0 {
		return exprToken{}, &Error{Pos: start, Msg: "a typeNumber needs at least one digit"}
	}
	mantissa := l.src[start:l.pos]
	exponent := 0
	// An e or E followed by a digit (or a sign and a digit) is an exponent; otherwise it starts a
	// suffix (E is exa).
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		i := l.pos + 1
		if i < len(l.src) && (l.src[i] == '+' || l.src[i] == '-') {
			i++
		}
		if i < len(l.src) && exprIsDigit(l.src[i]) {
			j := i
			for j < len(l.src) && exprIsDigit(l.src[j]) {
				j++
			}
			e, err := strconv.Atoi(l.src[l.pos+1 : j])
			if err != nil || e > exprMaxExponent || e < -exprMaxExponent {
				return exprToken{}, &Error{Pos: l.pos, Msg: fmt.Sprintf("exponent %s out of range [-%d, %d]", l.src[l.pos+1:j], exprMaxExponent, exprMaxExponent)}
			}
			exponent = e
			l.pos = j
		}
	}
	val, ok := new(big.Rat).SetString(mantissa)
	if !ok {
		return exprToken{}, &Error{Pos: start, Msg: fmt.Sprintf("invalid typeNumber %q", mantissa)}
	}
	if exponent != 0 {
		pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(exprAbs(exponent))), nil))
		if exponent > 0 {
			val.Mul(val, pow)
		} else {
			val.Quo(val, pow)
		}
	}
	switch {
	case l.pos < len(l.src) && l.src[l.pos] == '%':
		l.pos++
		val.Quo(val, big.NewRat(100, 1))
		return exprToken{kind: tokNumber, pos: start, text: l.src[start:l.pos], val: val}, nil
	case l.pos < len(l.src) && exprIsLetter(l.src[l.pos]):
		suffixStart := l.pos
		for l.pos < len(l.src) && exprIsLetter(l.src[l.pos]) {
			l.pos++
		}
		suffix := l.src[suffixStart:l.pos]
		if exponent != 0 {
			return exprToken{}, &Error{Pos: suffixStart, Msg: fmt.Sprintf("a typeQuantity cannot have both an exponent and the suffix %q", suffix)}
		}
		q, err := resource.ParseQuantity(mantissa + suffix)
		if err != nil || !exprQuantitySuffixes[suffix] {
			return exprToken{}, &Error{Pos: suffixStart, Msg: fmt.Sprintf("unknown typeQuantity suffix %q (want one of m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)", suffix)}
		}
		return exprToken{kind: tokQuantity, pos: start, text: l.src[start:l.pos], val: exprQuantityRat(q)}, nil
	default:
		return exprToken{kind: tokNumber, pos: start, text: l.src[start:l.pos], val: val}, nil
	}
}

var exprQuantitySuffixes = map[string]bool{
	"m": true, "k": true, "M": true, "G": true, "T": true, "P": true, "E": true,
	"Ki": true, "Mi": true, "Gi": true, "Ti": true, "Pi": true, "Ei": true,
}

func exprAbs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// exprParser is a recursive-descent parser with one token of look-ahead:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = "-" unary | primary
//	primary = NUMBER | QUANTITY | VARIABLE | FUNC "(" expr "," expr ")" | "(" expr ")"
type exprParser struct {
	lex      exprLexer
	tok      exprToken
	err      error
	variable Variable
}

func (p *exprParser) next() {
	if p.err != nil {
		return
	}
	p.tok, p.err = p.lex.scan()
	if p.err != nil {
		p.tok = exprToken{kind: tokEOF, pos: p.lex.pos}
	}
}

func (p *exprParser) isOp(s string) bool { return p.tok.kind == tokOp && p.tok.text == s }

func (p *exprParser) unexpected(want string) error {
	if p.err != nil {
		return p.err
	}
	return &Error{Pos: p.tok.pos, Msg: fmt.Sprintf("expected %s, found %s", want, p.tok.describe())}
}

func (p *exprParser) expr(depth int) (exprNode, error) {
	if depth > exprMaxDepth {
		return nil, &Error{Pos: p.tok.pos, Msg: fmt.Sprintf("nested deeper than %d", exprMaxDepth)}
	}
	left, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.tok
		p.next()
		right, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		if left, err = makeExprBinary(op.text[0], op.pos, left, right); err != nil {
			return nil, err
		}
	}
	return left, nil
}

func (p *exprParser) term(depth int) (exprNode, error) {
	left, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") {
		op := p.tok
		p.next()
		right, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		if left, err = makeExprBinary(op.text[0], op.pos, left, right); err != nil {
			return nil, err
		}
	}
	return left, nil
}

func (p *exprParser) unary(depth int) (exprNode, error) {
	if p.isOp("-") {
		if depth > exprMaxDepth {
			return nil, &Error{Pos: p.tok.pos, Msg: fmt.Sprintf("nested deeper than %d", exprMaxDepth)}
		}
		p.next()
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &exprNegate{x: x}, nil
	}
	return p.primary(depth)
}

const exprWantOperand = "a typeNumber, a typeQuantity, a variable, max(), min() or \"(\""

func (p *exprParser) primary(depth int) (exprNode, error) {
	t := p.tok
	switch {
	case t.kind == tokNumber || t.kind == tokQuantity:
		p.next()
		typ := typeNumber
		if t.kind == tokQuantity {
			typ = typeQuantity
		}
		return &exprLiteral{v: t.val, t: typ}, nil
	case p.isOp("("):
		p.next()
		x, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.isOp(")") {
			return nil, p.unexpected(`")"`)
		}
		p.next()
		return x, nil
	case t.kind == tokIdent:
		p.next()
		name := strings.ToLower(t.text)
		if p.isOp("(") {
			return p.call(t, name, depth)
		}
		if name != string(p.variable) {
			return nil, &Error{Pos: t.pos, Msg: fmt.Sprintf("unknown variable %q: a %s expression can use only %s", t.text, p.variable, p.variable)}
		}
		return exprVariable{}, nil
	default:
		return nil, p.unexpected(exprWantOperand)
	}
}

func (p *exprParser) call(name exprToken, fn string, depth int) (exprNode, error) {
	var op byte
	switch fn {
	case "max":
		op = 'M'
	case "min":
		op = 'm'
	default:
		return nil, &Error{Pos: name.pos, Msg: fmt.Sprintf("unknown function %q: want max or min", name.text)}
	}
	p.next() // (
	var args []exprNode
	for {
		x, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		args = append(args, x)
		if p.isOp(",") {
			p.next()
			continue
		}
		if p.isOp(")") {
			break
		}
		return nil, p.unexpected(`"," or ")"`)
	}
	if len(args) != 2 {
		return nil, &Error{Pos: name.pos, Msg: fmt.Sprintf("%s takes exactly 2 arguments, got %d", fn, len(args))}
	}
	p.next() // )
	return makeExprBinary(op, name.pos, args[0], args[1])
}

func makeExprBinary(op byte, pos int, l, r exprNode) (exprNode, error) {
	t, msg := combineTypes(op, l.typ(), r.typ())
	if msg != "" {
		return nil, &Error{Pos: pos, Msg: fmt.Sprintf("%s (%s %c %s)", msg, l.typ(), op, r.typ())}
	}
	// A constant divisor of zero is an error now, not at every Pod's injection.
	if op == '/' {
		if lit, ok := r.(*exprLiteral); ok && lit.v.Sign() == 0 {
			return nil, &Error{Pos: pos, Msg: "division by zero"}
		}
	}
	return &exprBinary{op: op, pos: pos, l: l, r: r, t: t}, nil
}
