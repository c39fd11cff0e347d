package family

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/convgen/convgen/problem"
)

// A family's knobs are one Go struct (directKnobs, igemmKnobs, ...): every
// exported int field is a knob named like the field, and an embedded
// struct contributes its knobs. Config, a map from knob name to value, is
// their serialized form at the boundary (candidate IDs, the tuning cache,
// pins); KnobsConfig and ParseKnobs convert between the two, here only.
//
// A field tagged `knob:",optional"` is left out of the Config when it is 0
// and reads 0 when the Config lacks it, so that a knob added to a family
// later keeps the IDs of the configurations that do not use it.

// knobField is one knob of a knob struct: its name, where it lies in the
// struct (reflect.Value.FieldByIndex) and whether it may be absent.
type knobField struct {
	name     string
	index    []int
	optional bool
}

// knobFields lists the knobs of struct type t in field order (unexported
// fields are not knobs). An exported field that is neither an int nor an
// embedded struct is a programming error in the family's knob type, which
// the first test that enumerates the family's space catches.
func knobFields(t reflect.Type) []knobField {
	var out []knobField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct { // exported or not: its fields are promoted
			for _, sub := range knobFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if f.Type.Kind() != reflect.Int {
			panic(fmt.Sprintf("kernels/family: knob %s.%s is a %s, not an int", t, f.Name, f.Type))
		}
		out = append(out, knobField{name: f.Name, index: []int{i}, optional: f.Tag.Get("knob") == ",optional"})
	}
	return out
}

// KnobNames lists the knobs of knob struct type K, sorted by name (the
// order of Config.String and so of candidate IDs).
func KnobNames[K any]() []string {
	var names []string
	for _, f := range knobFields(reflect.TypeFor[K]()) {
		names = append(names, f.name)
	}
	slices.Sort(names)
	return names
}

// KnobsConfig serializes knobs k (a knob struct) to a Config: every knob,
// optional ones only when not 0.
func KnobsConfig[K any](k K) Config {
	v := reflect.ValueOf(k)
	fields := knobFields(v.Type())
	cfg := make(Config, len(fields))
	for _, f := range fields {
		x := int(v.FieldByIndex(f.index).Int())
		if f.optional && x == 0 {
			continue
		}
		cfg[f.name] = x
	}
	return cfg
}

// ParseKnobs reads cfg into family's knob struct K. A knob K does not have
// (a misspelling, or another family's) and a knob cfg lacks (unless
// optional) are errors naming the knob.
func ParseKnobs[K any](family string, cfg Config) (K, error) {
	var k K
	v := reflect.ValueOf(&k).Elem()
	fields := knobFields(v.Type())
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.name] = true
		x, ok := cfg[f.name]
		if !ok && !f.optional {
			return k, fmt.Errorf("%s: config %s lacks knob %s", family, cfg, f.name)
		}
		v.FieldByIndex(f.index).SetInt(int64(x))
	}
	var unknown []string
	for name := range cfg {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return k, fmt.Errorf("%s: config %s has unknown knob %s (the knobs are %v)", family, cfg, unknown[0], KnobNames[K]())
	}
	return k, nil
}

// NewCandidate is a family's candidate of knobs k with verdict r.
func NewCandidate[K any](family string, k K, r Rejection) Candidate {
	return Candidate{Family: family, Config: KnobsConfig(k), Rejected: r.String(), Rejection: r}
}

// RenderKnobs is how a family's Render starts: serves must accept p, cfg
// must parse into the knob struct K, and check (nil: none) must find
// nothing wrong with the knobs ("" when fine; its message is reported as
// "FAMILY: config CFG: MESSAGE"). It returns the knobs and their Config in
// canonical form (KnobsConfig: the kernel's ID).
func RenderKnobs[K any](family string, serves func(problem.Problem) error, p problem.Problem, cfg Config, check func(K) string) (K, Config, error) {
	var zero K
	if err := serves(p); err != nil {
		return zero, nil, err
	}
	k, err := ParseKnobs[K](family, cfg)
	if err != nil {
		return zero, nil, err
	}
	if check != nil {
		if msg := check(k); msg != "" {
			return zero, nil, fmt.Errorf("%s: config %s: %s", family, cfg, msg)
		}
	}
	return k, KnobsConfig(k), nil
}
