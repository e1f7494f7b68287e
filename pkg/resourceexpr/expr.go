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
//
// SidecarSet validation refuses what does not parse; package sidecarset evaluates it at injection.
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
	// exprMaxDepth is the deepest nesting of parentheses, calls and unary minus.
	exprMaxDepth = 64
	// exprMaxExponent bounds the exponent of a number literal (1e18 is plenty for cores or bytes).
	exprMaxExponent = 30
)

// Variable is the resource an expression computes, and the name of its only variable.
type Variable string

const (
	ExprCPU    Variable = "cpu"
	ExprMemory Variable = "memory"
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
	root     exprNode
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Parse parses src as an expression of variable v.
func Parse(src string, v Variable) (*Expr, error) {
	if v != ExprCPU && v != ExprMemory {
		return nil, fmt.Errorf("unknown resource %q: want cpu or memory", v)
	}
	if len(src) > MaxLength {
		return nil, &Error{Pos: MaxLength, Msg: fmt.Sprintf("expression longer than %d bytes", MaxLength)}
	}
	p := &exprParser{lex: exprLexer{src: src}, variable: v}
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
	r, err := e.root.eval(exprQuantityRat(value))
	if err != nil {
		return resource.Quantity{}, err
	}
	if r.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("%s is negative (%s)", e.src, r.FloatString(3))
	}
	switch e.variable {
	case ExprCPU:
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

// exprQuantityRat is q's exact value in its base unit (cores, bytes).
func exprQuantityRat(q resource.Quantity) *big.Rat {
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

// exprType is what the type rules of the language tell apart.
type exprType int

const (
	typeNumber exprType = iota
	typeQuantity
)

func (t exprType) String() string {
	if t == typeQuantity {
		return "a quantity"
	}
	return "a typeNumber"
}

// exprNode is a checked expression tree node; values are rationals in the resource's base unit.
type exprNode interface {
	eval(variable *big.Rat) (*big.Rat, error)
	typ() exprType
}

type exprLiteral struct {
	v *big.Rat
	t exprType
}

func (l *exprLiteral) eval(*big.Rat) (*big.Rat, error) { return l.v, nil }
func (l *exprLiteral) typ() exprType                   { return l.t }

type exprVariable struct{}

func (exprVariable) eval(v *big.Rat) (*big.Rat, error) { return v, nil }
func (exprVariable) typ() exprType                     { return typeQuantity }

type exprNegate struct{ x exprNode }

func (n *exprNegate) eval(v *big.Rat) (*big.Rat, error) {
	x, err := n.x.eval(v)
	if err != nil {
		return nil, err
	}
	return new(big.Rat).Neg(x), nil
}
func (n *exprNegate) typ() exprType { return n.x.typ() }

type exprBinary struct {
	op   byte // + - * / and 'M' (max), 'm' (min)
	pos  int
	l, r exprNode
	t    exprType
}

func (b *exprBinary) typ() exprType { return b.t }

func (b *exprBinary) eval(v *big.Rat) (*big.Rat, error) {
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
func combineTypes(op byte, l, r exprType) (exprType, string) {
	switch op {
	case '*':
		if l == typeQuantity && r == typeQuantity {
			return 0, "multiplication of two quantities"
		}
	case '/':
		if r == typeQuantity {
			return 0, "division by a quantity"
		}
	}
	if l == typeQuantity || r == typeQuantity {
		return typeQuantity, ""
	}
	return typeNumber, ""
}
