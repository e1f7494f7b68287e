package resourceexpr

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func eval(t *testing.T, src string, v Variable, value string) (resource.Quantity, error) {
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
		{"cpu", CPU, "100m", "100m"},
		{"cpu * 2", CPU, "50m", "100m"},
		{"max(cpu, 200m)", CPU, "100m", "200m"},
		{"min(max(max(max(0.5,0.5*cpu),cpu-1.0),cpu-1.0),3.0)", CPU, "1", "500m"},
		{"max(0.25, cpu)", CPU, "100m", "250m"},
		{"min(0.8, cpu)", CPU, "2", "800m"},
		{"max(min(2*cpu,-cpu+3.0),2*cpu-3.0)", CPU, "1500m", "1500m"},
		{"memory + 100Mi", Memory, "200Mi", "300Mi"},
		{"0.5 * memory + max(0, memory-2Gi)", Memory, "8Gi", "10Gi"},
		// OpenKruise's e2e stories: sum/max of the targets, then the expression.
		{"max(cpu*50%, 50m)", CPU, "200m", "100m"},
		{"max(cpu*50%, 50m)", CPU, "600m", "300m"},
		{"max(cpu*50%, 50m)", CPU, "150m", "75m"},
		{"cpu*50% + 100m", CPU, "600m", "400m"},
		{"max(memory*20% + 100Mi, 200Mi)", Memory, "1000Mi", "300Mi"},
		{"cpu*30% + 50m", CPU, "300m", "140m"},
		{"memory*15% + 50Mi", Memory, "500Mi", "125Mi"},
		{"200Mi", Memory, "1Gi", "200Mi"},
		// Constants: a number is cores for cpu and bytes for memory.
		{"2", CPU, "0", "2"},
		{"1024", Memory, "0", "1Ki"},
		{"(2 + 3) * 4 / 10", CPU, "0", "2"},
		{"1e-1", CPU, "0", "100m"},
		{"1E2", CPU, "0", "100"},
		{"100% * 2", CPU, "0", "2"},
		{"- -1", CPU, "0", "1"},
		{"max(40m, 20)", CPU, "0", "20"},
		{"MAX(CPU, 1)", CPU, "2", "2"},
		{"1Gi", Memory, "0", "1Gi"},
		{" ( memory ) / 4 ", Memory, "1Gi", "256Mi"},
		// Exact arithmetic, rounded once: cpu down to the millicore, memory down to the byte.
		{"cpu / 3 * 3", CPU, "100m", "100m"},
		{"cpu / 3", CPU, "100m", "33m"},
		{"memory / 3", Memory, "10", "3"},
		// The variable is the only unknown: intermediate negatives are fine.
		{"max(0, cpu - 4) + 1", CPU, "2", "1"},
	} {
		got, err := eval(t, tc.src, tc.v, tc.value)
		if err != nil {
			t.Errorf("%s with %s=%s: %v", tc.src, tc.v, tc.value, err)
			continue
		}
		if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
			t.Errorf("%s with %s=%s = %s, want %s", tc.src, tc.v, tc.value, got.String(), tc.want)
		}
	}
}

func TestEvalFormat(t *testing.T) {
	got, err := eval(t, "memory*50%", Memory, "512Mi")
	if err != nil || got.String() != "256Mi" {
		t.Errorf("memory*50%% of 512Mi = %s, %v; want 256Mi", got.String(), err)
	}
	got, err = eval(t, "cpu*50%", CPU, "1")
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
		{"", CPU, 1, "expected a number"},
		{"cpu *", CPU, 6, "found the end"},
		{"cpu * 2m", CPU, 5, "multiplication of two quantities"},
		{"2 / cpu", CPU, 3, "division by a quantity"},
		{"10 / 0", CPU, 4, "division by zero"},
		{"cpu / (1 - 1) + 1", CPU, 5, ""}, // not constant-folded: refused at evaluation (TestEvalErrors)
		{"memory * 2", CPU, 1, `unknown variable "memory"`},
		{"cpu + 1", Memory, 1, `unknown variable "cpu"`},
		{"undefined_var", CPU, 1, "unknown variable"},
		{"unknown(1, 2)", CPU, 1, `unknown function "unknown"`},
		{"max(cpu)", CPU, 1, "max takes exactly 2 arguments, got 1"},
		{"min(1, 2, 3)", CPU, 1, "min takes exactly 2 arguments, got 3"},
		{"max(1 2)", CPU, 7, `expected "," or ")"`},
		{"(cpu", CPU, 5, `expected ")"`},
		{"cpu)", CPU, 4, "expected an operator or the end"},
		{"5..5", CPU, 3, "expected an operator or the end, found .5"},
		{".", CPU, 1, "a number needs at least one digit"},
		{"5%%", CPU, 3, `unexpected character "%"`},
		{"10x", CPU, 3, `unknown quantity suffix "x"`},
		{"1e3Mi", CPU, 4, "both an exponent and the suffix"},
		{"1e99", CPU, 2, "exponent 99 out of range"},
		{"cpu # 2", CPU, 5, `unexpected character "#"`},
		{"cpu × 2", CPU, 5, `unexpected character "×"`},
		{"+cpu", CPU, 1, "expected a number"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), CPU, 66, "nested deeper than 64"},
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
			t.Errorf("Parse(%q) = %v, want an *Error", tc.src, err)
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
		_, err := eval(t, tc.src, CPU, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with cpu=%s: %v, want %q", tc.src, tc.value, err, tc.want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	if _, err := Parse(strings.Repeat("1+", MaxLength/2)+"1", CPU); err == nil {
		t.Errorf("an expression longer than %d bytes was accepted", MaxLength)
	}
	if _, err := Parse(strings.Repeat("1+", 100)+"1", CPU); err != nil {
		t.Errorf("a long flat sum: %v", err)
	}
	if _, err := Parse("1", "gpu"); err == nil {
		t.Error("an expression of gpu was accepted")
	}
}
