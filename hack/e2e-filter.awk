# hack/e2e-filter.awk: what the e2e make targets print of `go test -v` (the whole output goes to
# _output/e2e*.log). The harness's programs log to the same stream, so only the test lines are
# kept: === RUN, --- PASS/FAIL, the package result, panics, the lines that name a _test.go file,
# and the continuation lines of a test's message (go test indents them under the line that
# names the file), so that a t.Fatalf with a multi-line value reaches CI's log whole.
/^(=== RUN|--- |PASS|FAIL|ok|panic)/ { print; cont = 0; fflush(); next }
/_test\.go:[0-9]+: / { print; cont = 1; fflush(); next }
/_test\.go/ { print; cont = 0; fflush(); next }
cont && /^        / { print; fflush(); next }
{ cont = 0 }
