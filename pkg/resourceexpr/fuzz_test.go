package resourceexpr

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FuzzParse feeds arbitrary text to the parser, as a SidecarSet's author can. Whatever the input,
// Parse must not panic and must either refuse it with a *Error inside the text or give an Expr
// that evaluates without panicking; and an accepted expression in parentheses must be accepted
// too, with the same value (or the same refusal at evaluation) — the grammar's own consistency.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"2 + 3", "(2 + 3) * 4", "50%", "100% * 2", "cpu * 50%", "max(10, 20)", "min(cpu, 100m)",
		"40m + 20m", "100Mi - 50Mi", "2 * 40m", "100m / 2", "max(cpu*50%, 50m)",
		"max(memory*20% + 100Mi, 200Mi)", "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)",
		"1e3", "1E-3", "1e3m", "1.5Gi", ".5", "5.", "-(-cpu)", "cpu / (cpu - cpu)", "cpu * 2m",
		"max(1)", "unknown(1, 2)", "5..5", "5%%", "10x", "((((cpu))))", "cpu\t+\n1", "1Ei", "1E",
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	values := []resource.Quantity{resource.MustParse("0"), resource.MustParse("250m"), resource.MustParse("3Gi")}
	f.Fuzz(func(t *testing.T, src string, cpu bool) {
		v := ExprMemory
		if cpu {
			v = ExprCPU
		}
		e, err := Parse(src, v)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q): %v is not a *Error", src, err)
			}
			if perr.Pos < 0 || perr.Pos > len(src) {
				t.Fatalf("Parse(%q): position %d outside the text", src, perr.Pos)
			}
			return
		}
		if len(src)+2 > MaxLength {
			return
		}
		wrapped, err := Parse("("+src+")", v)
		if err != nil {
			// Only the nesting limit can refuse one more pair of parentheses.
			var perr *Error
			if !errors.As(err, &perr) || perr.Msg != "nested deeper than 64" {
				t.Fatalf("Parse(%q) accepted but Parse((%q)) refused: %v", src, src, err)
			}
			return
		}
		for _, value := range values {
			got, err1 := e.Eval(value)
			again, err2 := wrapped.Eval(value)
			if (err1 == nil) != (err2 == nil) || err1 == nil && got.Cmp(again) != 0 {
				t.Fatalf("%q with %s: %s, %v but in parentheses %s, %v", src, value.String(), got.String(), err1, again.String(), err2)
			}
			if err1 == nil && got.Sign() < 0 {
				t.Fatalf("%q with %s: negative result %s", src, value.String(), got.String())
			}
		}
	})
}
