// Package resourceexpr is the expression language of a SidecarSet container's
// resourcesPolicy.resourcesExpr (OpenKruise v1.9): it computes one resource of a sidecar (cpu or
// memory, limits or requests) from the aggregated resource of the Pod's target containers.
//
// The language is OpenKruise's: numbers (2, 0.5, 1e3), percentages (50% is 0.5), Kubernetes
// quantities (100m, 256Mi, 1Gi), one variable (cpu in a cpu expression, memory in a memory
// expression, case-insensitive), + - * /, unary minus, parentheses and the two-argument
// functions max() and min(). Values are typed as OpenKruise types them: a quantity times or
// divided by a number is a quantity; a quantity times a quantity and anything divided by a
// quantity are errors; adding or comparing a number with a quantity takes the number in the
// resource's unit (cores, bytes).
//
// Unlike OpenKruise, which parses with goyacc and evaluates in float64 milli-units, an Expr is
// checked once when parsed (syntax, names, arity and types, each error with the column where it
// is) and evaluated with exact rational arithmetic, rounded once at the end: cpu down to the
// millicore, memory down to the byte. A negative result is an error, as in OpenKruise.
package resourceexpr

import (
	"fmt"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits of what Parse takes, so that no expression costs the webhook more than a few
// microseconds or its stack more than a few frames.
const (
	// MaxLength is the longest expression, in bytes.
	MaxLength = 1024
	// maxDepth is the deepest nesting of parentheses, calls and unary minus.
	maxDepth = 64
	// maxExponent bounds the exponent of a number literal (1e18 is plenty for cores or bytes).
	maxExponent = 30
)

// Variable is the resource an expression computes, and the name of its only variable.
type Variable string

const (
	CPU    Variable = "cpu"
	Memory Variable = "memory"
)

// Error is a parse or type error at a position of the expression.
type Error struct {
	// Pos is the byte offset of the error in the expression (0-based).
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at column %d: %s", e.Pos+1, e.Msg) }

// Expr is a parsed, type-checked expression.
type Expr struct {
	src      string
	variable Variable
	root     node
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Parse parses src as an expression of variable v.
func Parse(src string, v Variable) (*Expr, error) {
	if v != CPU && v != Memory {
		return nil, fmt.Errorf("unknown resource %q: want cpu or memory", v)
	}
	if len(src) > MaxLength {
		return nil, &Error{Pos: MaxLength, Msg: fmt.Sprintf("expression longer than %d bytes", MaxLength)}
	}
	p := &parser{lex: lexer{src: src}, variable: v}
	p.next()
	root, err := p.expr(0)
	if err == nil {
		err = p.err // a lexical error ends the token stream as if it were the end
	}
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected("an operator or the end")
	}
	return &Expr{src: src, variable: v, root: root}, nil
}

// Eval computes the expression with its variable set to value, as a quantity of the expression's
// resource: cpu rounded down to the millicore, memory down to the byte.
func (e *Expr) Eval(value resource.Quantity) (resource.Quantity, error) {
	r, err := e.root.eval(quantityRat(value))
	if err != nil {
		return resource.Quantity{}, err
	}
	if r.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("%s is negative (%s)", e.src, r.FloatString(3))
	}
	switch e.variable {
	case CPU:
		milli := new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1000)), r.Denom())
		if !milli.IsInt64() {
			return resource.Quantity{}, fmt.Errorf("%s is out of range", e.src)
		}
		return *resource.NewMilliQuantity(milli.Int64(), resource.DecimalSI), nil
	default:
		bytes := new(big.Int).Quo(r.Num(), r.Denom())
		if !bytes.IsInt64() {
			return resource.Quantity{}, fmt.Errorf("%s is out of range", e.src)
		}
		return *resource.NewQuantity(bytes.Int64(), resource.BinarySI), nil
	}
}

// quantityRat is q's exact value in its base unit (cores, bytes).
func quantityRat(q resource.Quantity) *big.Rat {
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	scale := int64(d.Scale())
	if scale == 0 {
		return r
	}
	abs := scale
	if abs < 0 {
		abs = -abs
	}
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs), nil))
	if scale > 0 {
		return r.Quo(r, pow)
	}
	return r.Mul(r, pow)
}

// valueType is what the type rules of the language tell apart.
type valueType int

const (
	number valueType = iota
	quantity
)

func (t valueType) String() string {
	if t == quantity {
		return "a quantity"
	}
	return "a number"
}

// node is a checked expression tree node; values are rationals in the resource's base unit.
type node interface {
	eval(variable *big.Rat) (*big.Rat, error)
	typ() valueType
}

type literal struct {
	v *big.Rat
	t valueType
}

func (l *literal) eval(*big.Rat) (*big.Rat, error) { return l.v, nil }
func (l *literal) typ() valueType                  { return l.t }

type variableRef struct{}

func (variableRef) eval(v *big.Rat) (*big.Rat, error) { return v, nil }
func (variableRef) typ() valueType                    { return quantity }

type negate struct{ x node }

func (n *negate) eval(v *big.Rat) (*big.Rat, error) {
	x, err := n.x.eval(v)
	if err != nil {
		return nil, err
	}
	return new(big.Rat).Neg(x), nil
}
func (n *negate) typ() valueType { return n.x.typ() }

type binary struct {
	op   byte // + - * / and 'M' (max), 'm' (min)
	pos  int
	l, r node
	t    valueType
}

func (b *binary) typ() valueType { return b.t }

func (b *binary) eval(v *big.Rat) (*big.Rat, error) {
	l, err := b.l.eval(v)
	if err != nil {
		return nil, err
	}
	r, err := b.r.eval(v)
	if err != nil {
		return nil, err
	}
	out := new(big.Rat)
	switch b.op {
	case '+':
		return out.Add(l, r), nil
	case '-':
		return out.Sub(l, r), nil
	case '*':
		return out.Mul(l, r), nil
	case '/':
		if r.Sign() == 0 {
			return nil, &Error{Pos: b.pos, Msg: "division by zero"}
		}
		return out.Quo(l, r), nil
	case 'M':
		if l.Cmp(r) >= 0 {
			return l, nil
		}
		return r, nil
	default: // 'm'
		if l.Cmp(r) <= 0 {
			return l, nil
		}
		return r, nil
	}
}

// combine is the type of l op r, or an error that says why the operation has no meaning.
func combine(op byte, l, r valueType) (valueType, string) {
	switch op {
	case '*':
		if l == quantity && r == quantity {
			return 0, "multiplication of two quantities"
		}
	case '/':
		if r == quantity {
			return 0, "division by a quantity"
		}
	}
	if l == quantity || r == quantity {
		return quantity, ""
	}
	return number, ""
}
