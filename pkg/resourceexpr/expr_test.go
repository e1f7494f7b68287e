package resourceexpr

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func evalExpr(t *testing.T, src string, v Variable, value string) (resource.Quantity, error) {
	t.Helper()
	e, err := Parse(src, v)
	if err != nil {
		return resource.Quantity{}, err
	}
	return e.Eval(resource.MustParse(value))
}

// The results OpenKruise's calculator and its SidecarSet e2e specs expect, with the variable
// bound to the aggregated resource of the target containers.
func TestEval(t *testing.T) {
	for _, tc := range []struct {
		src   string
		v     Variable
		value string
		want  string
	}{
		{"cpu", ExprCPU, "100m", "100m"},
		{"cpu * 2", ExprCPU, "50m", "100m"},
		{"max(cpu, 200m)", ExprCPU, "100m", "200m"},
		{"min(max(max(max(0.5,0.5*cpu),cpu-1.0),cpu-1.0),3.0)", ExprCPU, "1", "500m"},
		{"max(0.25, cpu)", ExprCPU, "100m", "250m"},
		{"min(0.8, cpu)", ExprCPU, "2", "800m"},
		{"max(min(2*cpu,-cpu+3.0),2*cpu-3.0)", ExprCPU, "1500m", "1500m"},
		{"memory + 100Mi", ExprMemory, "200Mi", "300Mi"},
		{"0.5 * memory + max(0, memory-2Gi)", ExprMemory, "8Gi", "10Gi"},
		// OpenKruise's e2e stories: sum/max of the targets, then the expression.
		{"max(cpu*50%, 50m)", ExprCPU, "200m", "100m"},
		{"max(cpu*50%, 50m)", ExprCPU, "600m", "300m"},
		{"max(cpu*50%, 50m)", ExprCPU, "150m", "75m"},
		{"cpu*50% + 100m", ExprCPU, "600m", "400m"},
		{"max(memory*20% + 100Mi, 200Mi)", ExprMemory, "1000Mi", "300Mi"},
		{"cpu*30% + 50m", ExprCPU, "300m", "140m"},
		{"memory*15% + 50Mi", ExprMemory, "500Mi", "125Mi"},
		{"200Mi", ExprMemory, "1Gi", "200Mi"},
		// Constants: a number is cores for cpu and bytes for memory.
		{"2", ExprCPU, "0", "2"},
		{"1024", ExprMemory, "0", "1Ki"},
		{"(2 + 3) * 4 / 10", ExprCPU, "0", "2"},
		{"1e-1", ExprCPU, "0", "100m"},
		{"1E2", ExprCPU, "0", "100"},
		{"100% * 2", ExprCPU, "0", "2"},
		{"- -1", ExprCPU, "0", "1"},
		{"max(40m, 20)", ExprCPU, "0", "20"},
		{"MAX(CPU, 1)", ExprCPU, "2", "2"},
		{"1Gi", ExprMemory, "0", "1Gi"},
		{" ( memory ) / 4 ", ExprMemory, "1Gi", "256Mi"},
		// Exact arithmetic, rounded once: cpu down to the millicore, memory down to the byte.
		{"cpu / 3 * 3", ExprCPU, "100m", "100m"},
		{"cpu / 3", ExprCPU, "100m", "33m"},
		{"memory / 3", ExprMemory, "10", "3"},
		// The variable is the only unknown: intermediate negatives are fine.
		{"max(0, cpu - 4) + 1", ExprCPU, "2", "1"},
	} {
		got, err := evalExpr(t, tc.src, tc.v, tc.value)
		if err != nil {
			t.Errorf("%s with %s=%s: %v", tc.src, tc.v, tc.value, err)
			continue
		}
		if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
			t.Errorf("%s with %s=%s = %s, want %s", tc.src, tc.v, tc.value, got.String(), tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	got, err := evalExpr(t, "memory*50%", ExprMemory, "512Mi")
	if err != nil || got.String() != "256Mi" {
		t.Errorf("memory*50%% of 512Mi = %s, %v; want 256Mi", got.String(), err)
	}
	got, err = evalExpr(t, "cpu*50%", ExprCPU, "1")
	if err != nil || got.String() != "500m" {
		t.Errorf("cpu*50%% of 1 = %s, %v; want 500m", got.String(), err)
	}
}

// Every refused expression says where: the column is the first byte of what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src  string
		v    Variable
		col  int
		want string
	}{
		{"", ExprCPU, 1, "expected a typeNumber"},
		{"cpu *", ExprCPU, 6, "found the end"},
		{"cpu * 2m", ExprCPU, 5, "multiplication of two quantities"},
		{"2 / cpu", ExprCPU, 3, "division by a quantity"},
		{"10 / 0", ExprCPU, 4, "division by zero"},
		{"cpu / (1 - 1) + 1", ExprCPU, 5, ""}, // not constant-folded: refused at evaluation (TestEvalErrors)
		{"memory * 2", ExprCPU, 1, `unknown variable "memory"`},
		{"cpu + 1", ExprMemory, 1, `unknown variable "cpu"`},
		{"undefined_var", ExprCPU, 1, "unknown variable"},
		{"unknown(1, 2)", ExprCPU, 1, `unknown function "unknown"`},
		{"max(cpu)", ExprCPU, 1, "max takes exactly 2 arguments, got 1"},
		{"min(1, 2, 3)", ExprCPU, 1, "min takes exactly 2 arguments, got 3"},
		{"max(1 2)", ExprCPU, 7, `expected "," or ")"`},
		{"(cpu", ExprCPU, 5, `expected ")"`},
		{"cpu)", ExprCPU, 4, "expected an operator or the end"},
		{"5..5", ExprCPU, 3, "expected an operator or the end, found .5"},
		{".", ExprCPU, 1, "a typeNumber needs at least one digit"},
		{"5%%", ExprCPU, 3, `unexpected character "%"`},
		{"10x", ExprCPU, 3, `unknown typeQuantity suffix "x"`},
		{"1e3Mi", ExprCPU, 4, "both an exponent and the suffix"},
		{"1e99", ExprCPU, 2, "exponent 99 out of range"},
		{"cpu # 2", ExprCPU, 5, `unexpected character "#"`},
		{"cpu × 2", ExprCPU, 5, `unexpected character "×"`},
		{"+cpu", ExprCPU, 1, "expected a typeNumber"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), ExprCPU, 66, "nested deeper than 64"},
	} {
		_, err := Parse(tc.src, tc.v)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Parse(%q): %v, want it accepted", tc.src, err)
			}
			continue
		}
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("Parse(%q) = %v, want a *Error", tc.src, err)
			continue
		}
		if perr.Pos+1 != tc.col || !strings.Contains(perr.Msg, tc.want) {
			t.Errorf("Parse(%q) = %q, want column %d and %q", tc.src, err, tc.col, tc.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for _, tc := range []struct {
		src, value, want string
	}{
		{"cpu - 1", "500m", "is negative"},
		{"-cpu", "1", "is negative"},
		{"cpu / (2 - 2*1)", "1", "division by zero"},
		{"cpu * 1e30 * 1e30", "1", "out of range"},
	} {
		_, err := evalExpr(t, tc.src, ExprCPU, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with cpu=%s: %v, want %q", tc.src, tc.value, err, tc.want)
		}
	}
}

func TestLimits(t *testing.T) {
	if _, err := Parse(strings.Repeat("1+", MaxLength/2)+"1", ExprCPU); err == nil {
		t.Errorf("an expression longer than %d bytes was accepted", MaxLength)
	}
	if _, err := Parse(strings.Repeat("1+", 100)+"1", ExprCPU); err != nil {
		t.Errorf("a long flat sum: %v", err)
	}
	if _, err := Parse("1", "gpu"); err == nil {
		t.Error("an expression of gpu was accepted")
	}
}
