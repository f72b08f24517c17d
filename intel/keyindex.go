package intel

import (
	"strings"
	"sync"
)

// The keyword index: one pass over a message's lowercased text with an Aho-Corasick automaton
// of every kre's keywords marks, for each line, which keywords it holds. A kre is then asked
// only of the lines holding one of its own keywords, the same lines kre.in finds with one
// strings.Index per keyword: a message's classification asks about twenty kres of the same 8
// KiB, and their two hundred keyword searches over it were a tenth of a scan.

// keyWords is the number of 64-bit words of a keyword set.
const keyWords = 5

// keySet is a set of keyword ids.
type keySet [keyWords]uint64

func (s *keySet) add(id int) { s[id/64] |= 1 << (id % 64) }
func (s *keySet) or(o *keySet) {
	for i := range s {
		s[i] |= o[i]
	}
}
func (s *keySet) meets(o *keySet) bool {
	for i := range s {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// keywords registers the kres' keywords (mk runs at package initialisation, before any
// scan), and builds the automaton on first use.
var keywords struct {
	ids   map[string]int
	once  sync.Once
	auto  *automaton
	names []string
}

// keyID returns the id of a keyword, registering it. It panics past the set's capacity: a
// programming error caught by any test (every kre is made at initialisation).
func keyID(w string) int {
	if keywords.ids == nil {
		keywords.ids = map[string]int{}
	}
	if id, ok := keywords.ids[w]; ok {
		return id
	}
	id := len(keywords.names)
	if id >= keyWords*64 {
		panic("intel: too many kre keywords; raise keyWords")
	}
	keywords.ids[w] = id
	keywords.names = append(keywords.names, w)
	return id
}

// automaton is an Aho-Corasick automaton over bytes as a full transition table: next[state*256
// + byte]. Its states are few (the keywords are short), so the table stays small.
type automaton struct {
	next []uint16
	out  []keySet // the keywords that end at a state (its suffixes' included)
	hit  []bool   // out is not empty
}

func build(words []string) *automaton {
	type node struct {
		child map[byte]int
		fail  int
		out   keySet
		any   bool
	}
	nodes := []node{{child: map[byte]int{}}}
	for id, w := range words {
		s := 0
		for i := 0; i < len(w); i++ {
			c, ok := nodes[s].child[w[i]]
			if !ok {
				c = len(nodes)
				nodes = append(nodes, node{child: map[byte]int{}})
				nodes[s].child[w[i]] = c
			}
			s = c
		}
		nodes[s].out.add(id)
		nodes[s].any = true
	}
	if len(nodes) > 1<<16 {
		panic("intel: keyword automaton too large")
	}
	a := &automaton{next: make([]uint16, len(nodes)*256), out: make([]keySet, len(nodes)), hit: make([]bool, len(nodes))}
	// Breadth first: a state's failure state is shallower, so its row is complete when needed.
	queue := []int{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		if s != 0 {
			nodes[s].out.or(&nodes[f].out)
			nodes[s].any = nodes[s].any || nodes[f].any
		}
		for b := 0; b < 256; b++ {
			c, ok := nodes[s].child[byte(b)]
			switch {
			case ok:
				if s != 0 {
					nodes[c].fail = int(a.next[f*256+b])
				}
				a.next[s*256+b] = uint16(c)
				queue = append(queue, c)
			case s != 0:
				a.next[s*256+b] = a.next[f*256+b]
			}
		}
		a.out[s], a.hit[s] = nodes[s].out, nodes[s].any
	}
	return a
}

// keyLine is a line of an indexed text that holds at least one keyword.
type keyLine struct {
	start, end int // the line, without its line break
	keys       keySet
}

// keyIndex is a lowercased text and the keywords of each of its lines.
type keyIndex struct {
	low   string
	lines []keyLine
}

// index indexes low (lowercased text) into x, reusing x's memory.
func (x *keyIndex) index(low string) {
	keywords.once.Do(func() { keywords.auto = build(keywords.names) })
	a := keywords.auto
	x.low, x.lines = low, x.lines[:0]
	var cur keySet
	found := false
	start, s := 0, 0
	for i := 0; i < len(low); i++ {
		c := low[i]
		if c == '\n' {
			if found {
				x.lines = append(x.lines, keyLine{start: start, end: i, keys: cur})
				cur, found = keySet{}, false
			}
			start, s = i+1, 0
			continue
		}
		s = int(a.next[s<<8|int(c)])
		if a.hit[s] {
			cur.or(&a.out[s])
			found = true
		}
	}
	if found {
		x.lines = append(x.lines, keyLine{start: start, end: len(low), keys: cur})
	}
}

// has reports whether k matches the indexed text: kre.in's answer, asked only of the lines
// that hold one of k's keywords.
func (x *keyIndex) has(k kre) bool {
	for i := range x.lines {
		l := &x.lines[i]
		if l.keys.meets(&k.set) && k.MatchString(x.low[l.start:l.end]) {
			return true
		}
	}
	return false
}

// hasWord reports whether the indexed text holds one of the keywords of set.
func (x *keyIndex) hasWord(set *keySet) bool {
	for i := range x.lines {
		if x.lines[i].keys.meets(set) {
			return true
		}
	}
	return false
}

// keySetOf returns the set of keywords ws, registering them.
func keySetOf(ws ...string) keySet {
	var s keySet
	for _, w := range ws {
		if w != strings.ToLower(w) {
			panic("intel: kre keyword not lowercase: " + w)
		}
		s.add(keyID(w))
	}
	return s
}

var keyIndexes = sync.Pool{New: func() any { return new(keyIndex) }}
