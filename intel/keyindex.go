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

// automaton is an Aho-Corasick automaton over bytes as a transition table on byte classes
// (each byte of a keyword its own class, every other byte one class): next[state*ncls +
// class[b]]. ASCII letters are matched without regard to case. The table of a few hundred
// keywords is then about a hundred KiB, where a row of 256 per state made it most of a MiB,
// too large for the caches of the one pass it is built for.
type automaton struct {
	class [256]uint16
	ncls  int
	next  []uint16
	out   []keySet // the keywords that end at a state (its suffixes' included)
	hit   []bool   // out is not empty
}

func build(words []string) *automaton {
	a := &automaton{ncls: 1}
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if c := w[i]; a.class[c] == 0 {
				a.class[c] = uint16(a.ncls)
				a.ncls++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		a.class[c] = a.class[c+'a'-'A']
	}
	type node struct {
		child map[uint16]int
		fail  int
		out   keySet
		any   bool
	}
	nodes := []node{{child: map[uint16]int{}}}
	for id, w := range words {
		s := 0
		for i := 0; i < len(w); i++ {
			cl := a.class[w[i]]
			c, ok := nodes[s].child[cl]
			if !ok {
				c = len(nodes)
				nodes = append(nodes, node{child: map[uint16]int{}})
				nodes[s].child[cl] = c
			}
			s = c
		}
		nodes[s].out.add(id)
		nodes[s].any = true
	}
	if len(nodes) > 1<<16 {
		panic("intel: keyword automaton too large")
	}
	n := a.ncls
	a.next, a.out, a.hit = make([]uint16, len(nodes)*n), make([]keySet, len(nodes)), make([]bool, len(nodes))
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
		for cl := 0; cl < n; cl++ {
			c, ok := nodes[s].child[uint16(cl)]
			switch {
			case ok:
				if s != 0 {
					nodes[c].fail = int(a.next[f*n+cl])
				}
				a.next[s*n+cl] = uint16(c)
				queue = append(queue, c)
			case s != 0:
				a.next[s*n+cl] = a.next[f*n+cl]
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
	a := keywordAutomaton()
	n := a.ncls
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
		s = int(a.next[s*n+int(a.class[c])])
		if a.hit[s] {
			cur.or(&a.out[s])
			found = true
		}
	}
	if found {
		x.lines = append(x.lines, keyLine{start: start, end: len(low), keys: cur})
	}
}

// keywordAutomaton returns the automaton of every kre's keywords, built on first use.
func keywordAutomaton() *automaton {
	keywords.once.Do(func() { keywords.auto = build(keywords.names) })
	return keywords.auto
}

// keysOf returns the keywords a lowercased line holds.
func keysOf(low string) keySet {
	a := keywordAutomaton()
	var ks keySet
	n, s := a.ncls, 0
	for i := 0; i < len(low); i++ {
		s = int(a.next[s*n+int(a.class[low[i]])])
		if a.hit[s] {
			ks.or(&a.out[s])
		}
	}
	return ks
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
