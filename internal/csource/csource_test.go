package csource

import "testing"

const kernel = `// convgen kernel
#define TILE 16 // tile size
/* the main
   loop */
__global__ void k(float* out) {
    const char* s = "a // not a comment /* nor this */";
    char c = '"';   char d = '\'';
	out[0] = TILE   *2; /* inline */ out[1] = 3;
#define LONG(x) \
    ((x) + 1)

}
`

func TestNormalize(t *testing.T) {
	want := `#define TILE 16
__global__ void k(float* out) {
const char* s = "a // not a comment /* nor this */";
char c = '"'; char d = '\'';
out[0] = TILE *2; out[1] = 3;
#define LONG(x) \
((x) + 1)
}
`
	if got := Normalize(kernel); got != want {
		t.Errorf("Normalize:\n%s\nwant:\n%s", got, want)
	}
}

func TestNormalizeIgnoresCommentsAndSpacing(t *testing.T) {
	edited := `// convgen kernel, reworded comment
#define TILE 16    // the tile size, in pixels

/* the main loop,
   described at more length
   over three lines */
__global__ void k(float* out) {
  const char* s = "a // not a comment /* nor this */";
  char c = '"'; char d = '\'';
  out[0] = TILE *2;/* inline, changed */out[1] = 3;
#define LONG(x) \
  ((x) + 1)
}`
	if a, b := Normalize(kernel), Normalize(edited); a != b {
		t.Errorf("comment and spacing edits changed the normal form:\n%s\nvs\n%s", a, b)
	}
}

func TestNormalizeSeesCodeChanges(t *testing.T) {
	for _, c := range []struct{ name, from, to string }{
		{"a digit", "TILE 16", "TILE 17"},
		{"an operator", "TILE   *2", "TILE   +2"},
		{"a string literal", "nor this", "nor that"},
		{"spacing in a string literal", `"a // not`, `"a  // not`},
		{"a comment made code", "/* inline */ out[1]", "inline; out[1]"},
		{"a line continuation", "LONG(x) \\\n", "LONG(x)\n"},
		{"tokens joined", "float* out", "float*out2"},
	} {
		edited := replaceOnce(t, kernel, c.from, c.to)
		if Normalize(edited) == Normalize(kernel) {
			t.Errorf("changing %s (%q -> %q) left the normal form unchanged", c.name, c.from, c.to)
		}
	}
}

func TestNormalizeKeepsTokensApart(t *testing.T) {
	// A block comment separates tokens, as in C: "a/**/b" is two tokens.
	if a, b := Normalize("int a/**/b;"), Normalize("int ab;"); a == b {
		t.Errorf("a/**/b and ab normalise alike: %q", a)
	}
	if got := Normalize("x = 1; /* unterminated"); got != "x = 1;\n" {
		t.Errorf("unterminated comment: %q", got)
	}
	if got := Normalize(`s = "unterminated`); got != "s = \"unterminated\n" {
		t.Errorf("unterminated string: %q", got)
	}
}

func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	for i := 0; i+len(from) <= len(s); i++ {
		if s[i:i+len(from)] == from {
			return s[:i] + to + s[i+len(from):]
		}
	}
	t.Fatalf("%q not in the kernel", from)
	return ""
}

func FuzzNormalize(f *testing.F) {
	f.Add(kernel)
	f.Fuzz(func(t *testing.T, src string) {
		n := Normalize(src)
		if Normalize(n) != n {
			t.Errorf("Normalize is not idempotent on %q: %q then %q", src, n, Normalize(n))
		}
	})
}
