package corpus

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Expected is the storage class a plan should give each label ("" for notifications, which
// the general size and age rules decide).
var Expected = map[Label]string{
	Conversation:  "protected_by_rule",
	Transactional: "preserve",
	Marketing:     "promotional",
	Junk:          "likely_removable",
	Notification:  "",
}

// Outcome is what a plan did with one labelled message.
type Outcome struct {
	Label   Label
	Class   string // the plan's storageClass
	Trashed bool   // the plan trashes it
}

// Score is the measurement of one plan over a labelled corpus.
type Score struct {
	Total        int
	ByLabel      map[Label]int
	Predicted    map[string]int           // by class
	Correct      map[Label]int            // label got its expected class
	Trashed      map[Label]int            // by label
	Confusion    map[Label]map[string]int // label -> class -> count
	TrashedWrong int                      // trashed conversations and transactional mail
	TrashedAll   int
}

// Tally scores outcomes.
func Tally(outs []Outcome) *Score {
	s := &Score{ByLabel: map[Label]int{}, Predicted: map[string]int{}, Correct: map[Label]int{}, Trashed: map[Label]int{}, Confusion: map[Label]map[string]int{}}
	for _, o := range outs {
		s.Total++
		s.ByLabel[o.Label]++
		s.Predicted[o.Class]++
		if s.Confusion[o.Label] == nil {
			s.Confusion[o.Label] = map[string]int{}
		}
		s.Confusion[o.Label][o.Class]++
		if Expected[o.Label] != "" && Expected[o.Label] == o.Class {
			s.Correct[o.Label]++
		}
		if o.Trashed {
			s.Trashed[o.Label]++
			s.TrashedAll++
			if o.Label == Conversation || o.Label == Transactional {
				s.TrashedWrong++
			}
		}
	}
	return s
}

// Precision of the class a label should get: of everything given that class, the share that
// has the label.
func (s *Score) Precision(l Label) float64 {
	c := Expected[l]
	if s.Predicted[c] == 0 {
		return 1
	}
	return float64(s.Correct[l]) / float64(s.Predicted[c])
}

// Recall of a label: the share of it given its class.
func (s *Score) Recall(l Label) float64 {
	if s.ByLabel[l] == 0 {
		return 1
	}
	return float64(s.Correct[l]) / float64(s.ByLabel[l])
}

// TrashedShare is the share of a label's messages the plan trashes.
func (s *Score) TrashedShare(l Label) float64 {
	if s.ByLabel[l] == 0 {
		return 0
	}
	return float64(s.Trashed[l]) / float64(s.ByLabel[l])
}

// RemovalPrecision is the share of what the plan trashes that may be trashed (not a
// conversation, not transactional).
func (s *Score) RemovalPrecision() float64 {
	if s.TrashedAll == 0 {
		return 1
	}
	return 1 - float64(s.TrashedWrong)/float64(s.TrashedAll)
}

// Print writes the per-class table and the confusion matrix.
func (s *Score) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "label\tmessages\texpected class\tprecision\trecall\ttrashed\t")
	for _, l := range Labels {
		exp := Expected[l]
		if exp == "" {
			fmt.Fprintf(tw, "%s\t%d\t(general rules)\t-\t-\t%.2f%%\t\n", l, s.ByLabel[l], 100*s.TrashedShare(l))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%.2f%%\t\n", l, s.ByLabel[l], exp, s.Precision(l), s.Recall(l), 100*s.TrashedShare(l))
	}
	tw.Flush()
	classes := make([]string, 0, len(s.Predicted))
	for c := range s.Predicted {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	fmt.Fprint(tw, "\nlabel \\ class")
	for _, c := range classes {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw, "\t")
	for _, l := range Labels {
		fmt.Fprint(tw, l)
		for _, c := range classes {
			fmt.Fprintf(tw, "\t%d", s.Confusion[l][c])
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
}
