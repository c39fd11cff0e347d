package kernels

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// codePaths returns the code paths that kernel source src compiles, as
// items for a covering sample: every preprocessor conditional (#if, #ifdef,
// #ifndef, #elif) that the preprocessor reaches, with the value it takes,
// after the conditionals it is nested in ("#if SPLIT3=1 > #if NHWC=0"; an
// #elif or #else after its chain's #if: "#if HALF … #else=1"), and every
// line the preprocessor keeps, with its numbers and the kernel's name
// (name) blanked ("#define TILE_K #", "acc[#] += a * b;"), so that two
// configurations that differ only in constants share their lines. The
// families' templates select code with conditionals on macros that the
// template sets (NHWC, HALF, SPLIT3, ASYNC_A, CHANNELS_PER_THREAD % 4 == 0)
// and with template actions that add or drop lines: a sample that has
// every item of every candidate compiles every branch of both.
// Conditionals are evaluated with the object-like macros defined before
// them (undefined names are 0, as in C); one that cannot be evaluated
// (a function-like macro) is an item with the value "?".
func codePaths(src, name string) []string {
	defs := map[string]string{}
	type frame struct {
		path          string // the enclosing conditionals' items, " > "-joined, and this one's
		active, taken bool   // this branch is compiled; some branch of the chain was
		outer         bool   // the enclosing region is compiled
		parent        string // the enclosing conditionals' items
		head          string // the chain's #if, #ifdef or #ifndef
	}
	var stack []frame
	active := func() bool { return len(stack) == 0 || stack[len(stack)-1].active }
	path := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].path
	}
	seen := map[string]bool{}
	var items []string
	add := func(item string) {
		if !seen[item] {
			seen[item] = true
			items = append(items, item)
		}
	}
	cond := func(parent, text string, v int64, ok bool) string {
		s := text + "=" + strconv.FormatInt(v, 10)
		if !ok {
			s = text + "=?"
		}
		if parent != "" {
			s = parent + " > " + s
		}
		return s
	}
	for _, line := range strings.Split(src, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "#") {
			dir, rest, _ := strings.Cut(strings.TrimSpace(l[1:]), " ")
			rest = strings.TrimSpace(stripComment(rest))
			switch dir {
			case "if", "ifdef", "ifndef":
				outer := active()
				var v int64
				ok := true
				switch dir {
				case "if":
					v, ok = ppEval(rest, defs)
				case "ifdef", "ifndef":
					if _, d := defs[rest]; d == (dir == "ifdef") {
						v = 1
					}
				}
				text := strings.TrimSpace("#" + dir + " " + rest)
				item := cond(path(), text, v, ok)
				if outer {
					add(item)
				}
				stack = append(stack, frame{path: item, active: outer && v != 0, taken: v != 0, outer: outer, parent: path(), head: text})
				continue
			case "elif", "else":
				if len(stack) == 0 {
					continue
				}
				f := &stack[len(stack)-1]
				var v int64 = 1
				ok := true
				if dir == "elif" {
					v, ok = ppEval(rest, defs)
				}
				if f.taken {
					v = 0 // an earlier branch of the chain was taken
				}
				text := f.head + " … " + strings.TrimSpace("#"+dir+" "+rest)
				item := cond(f.parent, text, v, ok)
				if f.outer {
					add(item)
				}
				f.path, f.active, f.taken = item, f.outer && v != 0, f.taken || v != 0
				continue
			case "endif":
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				continue
			case "define":
				if active() {
					if n, body, ok := strings.Cut(strings.TrimSpace(rest), " "); ok && !strings.Contains(n, "(") {
						defs[n] = strings.TrimSpace(body)
					} else if !strings.Contains(n, "(") {
						defs[strings.TrimSpace(rest)] = ""
					}
				}
			case "undef":
				if active() {
					delete(defs, rest)
				}
			}
		}
		if !active() {
			continue
		}
		if l = strings.TrimSpace(stripComment(l)); l == "" {
			continue
		}
		if name != "" {
			l = strings.ReplaceAll(l, name, "NAME")
		}
		add("line " + blankNumbers(l))
	}
	return items
}

// blankNumbers replaces each number in l that is not part of an
// identifier (with its hex digits, fraction and suffixes) by "#".
func blankNumbers(l string) string {
	if strings.IndexAny(l, "0123456789") < 0 {
		return l
	}
	b := make([]byte, 0, len(l))
	for i := 0; i < len(l); {
		c := l[i]
		if isDigit(c) && (i == 0 || !isIdent(l[i-1])) {
			b = append(b, '#')
			for i < len(l) && (isIdent(l[i]) || l[i] == '.') {
				i++
			}
			continue
		}
		b = append(b, c)
		i++
	}
	return string(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdent(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// stripComment drops a // comment from a line (not inside a string: the
// kernels' sources have no "//" in a string literal).
func stripComment(l string) string {
	if i := strings.Index(l, "//"); i >= 0 {
		return l[:i]
	}
	return l
}

// ppEval evaluates a preprocessor #if expression with the object-like
// macros defs, and reports whether it could.
func ppEval(expr string, defs map[string]string) (v int64, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = 0, false
		}
	}()
	p := &ppParser{defs: defs}
	p.tokens = ppTokens(expr)
	v = p.ternary()
	if p.i != len(p.tokens) {
		panic("trailing tokens")
	}
	return v, true
}

// ppOps are the preprocessor's operators, the two-character ones first.
var ppOps = []string{"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "-", "+", "*", "/", "%", "(", ")", "!", "~", "<", ">", "&", "|", "^", "?", ":"}

// ppTokens splits a preprocessor expression into tokens (numbers without
// their u and l suffixes, names, operators); it panics on anything else.
func ppTokens(expr string) []string {
	var out []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isIdent(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			tok := expr[i:j]
			if isDigit(c) {
				tok = strings.TrimRight(tok, "uUlL")
			}
			out = append(out, tok)
			i = j
		default:
			found := false
			for _, op := range ppOps {
				if strings.HasPrefix(expr[i:], op) {
					out = append(out, op)
					i += len(op)
					found = true
					break
				}
			}
			if !found {
				panic(fmt.Sprintf("bad token in %q", expr[i:]))
			}
		}
	}
	return out
}

// ppParser is a precedence-climbing parser and evaluator of C's
// preprocessor expressions over int64.
type ppParser struct {
	tokens []string
	i      int
	defs   map[string]string
	depth  int
}

func (p *ppParser) peek() string {
	if p.i < len(p.tokens) {
		return p.tokens[p.i]
	}
	return ""
}

func (p *ppParser) next() string {
	t := p.peek()
	if t == "" {
		panic("unexpected end")
	}
	p.i++
	return t
}

// ppLevels are the binary operators by increasing precedence.
var ppLevels = [][]string{{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}}

func (p *ppParser) ternary() int64 {
	c := p.binary(0)
	if p.peek() != "?" {
		return c
	}
	p.next()
	a := p.ternary()
	if p.next() != ":" {
		panic("want :")
	}
	b := p.ternary()
	if c != 0 {
		return a
	}
	return b
}

func (p *ppParser) binary(level int) int64 {
	if level == len(ppLevels) {
		return p.unary()
	}
	v := p.binary(level + 1)
	for {
		op := p.peek()
		found := false
		for _, o := range ppLevels[level] {
			found = found || o == op
		}
		if !found {
			return v
		}
		p.next()
		w := p.binary(level + 1)
		v = ppApply(op, v, w)
	}
}

func ppApply(op string, a, b int64) int64 {
	bool2 := func(c bool) int64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case "||":
		return bool2(a != 0 || b != 0)
	case "&&":
		return bool2(a != 0 && b != 0)
	case "|":
		return a | b
	case "^":
		return a ^ b
	case "&":
		return a & b
	case "==":
		return bool2(a == b)
	case "!=":
		return bool2(a != b)
	case "<":
		return bool2(a < b)
	case "<=":
		return bool2(a <= b)
	case ">":
		return bool2(a > b)
	case ">=":
		return bool2(a >= b)
	case "<<":
		return a << uint(b)
	case ">>":
		return a >> uint(b)
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "/":
		return a / b // division by zero panics: not evaluable
	case "%":
		return a % b
	}
	panic("operator " + op)
}

func (p *ppParser) unary() int64 {
	switch t := p.next(); t {
	case "!":
		if p.unary() == 0 {
			return 1
		}
		return 0
	case "~":
		return ^p.unary()
	case "-":
		return -p.unary()
	case "+":
		return p.unary()
	case "(":
		v := p.ternary()
		if p.next() != ")" {
			panic("want )")
		}
		return v
	case "defined":
		paren := p.peek() == "("
		if paren {
			p.next()
		}
		_, d := p.defs[p.next()]
		if paren && p.next() != ")" {
			panic("want )")
		}
		if d {
			return 1
		}
		return 0
	default:
		if t[0] >= '0' && t[0] <= '9' {
			v, err := strconv.ParseInt(t, 0, 64)
			if err != nil {
				panic(err)
			}
			return v
		}
		body, d := p.defs[t]
		if !d {
			return 0 // an undefined name is 0
		}
		if p.peek() == "(" {
			panic("function-like macro")
		}
		if p.depth > 32 {
			panic("macro recursion")
		}
		q := &ppParser{tokens: ppTokens(body), defs: p.defs, depth: p.depth + 1}
		v := q.ternary()
		if q.i != len(q.tokens) {
			panic("macro body is not one expression")
		}
		return v
	}
}

// TestCodePaths checks codePaths on a small source: the conditionals'
// values, nesting, #elif and #else chains, macros defined by macros,
// inactive regions' lines and conditionals left out, numbers and the
// kernel's name blanked.
func TestCodePaths(t *testing.T) {
	src := `#define A 2
#define B (A * 3) // six
#define HALF 0
extern "C" __global__ void k_123(float* out) {
#if HALF
    half_only(1);
#if A
    never();
#endif
#elif B % 4 == 2 && !defined(C)
    out[12] = 3.5f; // k_123
#if A > 1
    k_123_helper(A);
#else
    also_never();
#endif
#else
    other();
#endif
#ifdef A
    float x = 0x10u;
#endif
}`
	got := strings.Join(codePaths(src, "k_123"), "\n")
	want := strings.Join([]string{
		"line #define A #",
		"line #define B (A * #)",
		"line #define HALF #",
		`line extern "C" __global__ void NAME(float* out) {`,
		"#if HALF=0",
		"#if HALF … #elif B % 4 == 2 && !defined(C)=1",
		"line out[#] = #;",
		"#if HALF … #elif B % 4 == 2 && !defined(C)=1 > #if A > 1=1",
		"line NAME_helper(A);",
		"#if HALF … #elif B % 4 == 2 && !defined(C)=1 > #if A > 1 … #else=0",
		"#if HALF … #else=0",
		"#ifdef A=1",
		"line float x = #;",
		"line }",
	}, "\n")
	if got != want {
		t.Errorf("codePaths =\n%s\nwant\n%s", got, want)
	}
	for expr, want := range map[string]int64{"1 + 2 * 3": 7, "(1 + 2) * 3": 9, "!0 && 4 % 3 == 1": 1, "-1 < 0 ? 5 : 6": 5, "1 << 4 | 1": 17, "UNDEFINED": 0} {
		if v, ok := ppEval(expr, nil); !ok || v != want {
			t.Errorf("ppEval(%q) = %d, %v; want %d", expr, v, ok, want)
		}
	}
	for _, expr := range []string{"F(1)", "1 +", "1 / 0", "(1"} {
		if _, ok := ppEval(expr, map[string]string{"F": "x"}); ok {
			t.Errorf("ppEval(%q) evaluated", expr)
		}
	}
}

// pathCover returns the indexes, ascending, of a subset of kernels that
// has every knob value and every code path of every kernel, by family
// (kernelItems), and every item that extra (if not nil) gives for some
// kernel (by index): greedyCover's sample.
func pathCover(kernels []Kernel, extra func(i int) []string) []int {
	sets := make([][]string, len(kernels))
	for i, k := range kernels {
		sets[i] = kernelItems(k)
		if extra != nil {
			sets[i] = append(sets[i], extra(i)...)
		}
	}
	return greedyCover(sets)
}

// coverJobs returns jobs under the full sweep; by default, the jobs, in
// order, whose kernels have every knob value and every code path of every
// job's kernel (pathCover) and every item that extra gives for some job.
func coverJobs(jobs []compileJob, extra func(j compileJob) []string) []compileJob {
	if fullSweep() {
		return jobs
	}
	kerns := make([]Kernel, len(jobs))
	for i, j := range jobs {
		kerns[i] = j.kernel
	}
	var out []compileJob
	for _, i := range pathCover(kerns, func(i int) []string { return extra(jobs[i]) }) {
		out = append(out, jobs[i])
	}
	return out
}

// cpuSample returns the indexes, ascending, of the kernels (of one test's
// CPU runs) that run: every one under the full sweep; by default
// greedyCover's subset that has every item items gives for some kernel (the
// test's shapes, precisions, layouts, store shapes...) and every code path
// (codePaths) of every kernel.
func cpuSample(kernels []Kernel, items func(i int) []string) []int {
	if fullSweep() {
		return allIndexes(len(kernels))
	}
	sets := make([][]string, len(kernels))
	for i, k := range kernels {
		for _, path := range codePaths(k.Source, k.Name) {
			sets[i] = append(sets[i], k.Family+" "+path)
		}
		sets[i] = append(sets[i], items(i)...)
	}
	return greedyCover(sets)
}

// allIndexes is 0, 1, ..., n-1.
func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
