package report

import (
	"math"
	"slices"
	"time"
)

// The timeline's axis maps times to percents of its width. A session resumed hours later
// (the runs of a CI pipeline) would squash every run to a sliver: an idle stretch — no
// turn queued or running, no notification — longer than a tenth of the whole and than
// minGap is drawn as a break of gapWidth percent instead.
const (
	minGap   = 5 * time.Second
	gapWidth = 3.0
)

// axis is the timeline's scale: busy segments drawn to scale, the idle gaps between them
// as breaks.
type axis struct {
	start time.Time
	segs  []segment
}

// segment is a stretch of time [from, to] drawn from x0 to x1 (percent).
type segment struct {
	from, to time.Time
	x0, x1   float64
}

// gap is an idle stretch drawn as a break.
type gap struct {
	Left, Width float64
	Label       string
}

// newAxis returns the axis of r.
func newAxis(r *Report) *axis {
	a := &axis{start: r.Start}
	type iv struct{ from, to time.Time }
	var ivs []iv
	for _, l := range r.Lanes {
		for _, t := range l.Turns {
			from := t.Start
			if !t.Queued.IsZero() {
				from = t.Queued
			}
			ivs = append(ivs, iv{from, t.End})
		}
	}
	for _, n := range r.Notifications {
		ivs = append(ivs, iv{n.Time, n.Time})
	}
	slices.SortFunc(ivs, func(x, y iv) int { return x.from.Compare(y.from) })
	span := r.End.Sub(r.Start)
	threshold := max(minGap, span/10)
	var busy []iv
	for _, v := range ivs {
		if n := len(busy); n > 0 && v.from.Sub(busy[n-1].to) <= threshold {
			if v.to.After(busy[n-1].to) {
				busy[n-1].to = v.to
			}
			continue
		}
		busy = append(busy, v)
	}
	if len(busy) <= 1 || span <= 0 {
		a.segs = []segment{{from: r.Start, to: r.End, x0: 0, x1: 100}}
		return a
	}
	busy[0].from, busy[len(busy)-1].to = r.Start, r.End
	var total time.Duration
	for _, b := range busy {
		total += b.to.Sub(b.from)
	}
	width := 100 - gapWidth*float64(len(busy)-1)
	x := 0.0
	for i, b := range busy {
		w := width / float64(len(busy)) // segments of no duration share the width evenly
		if total > 0 {
			w = width * float64(b.to.Sub(b.from)) / float64(total)
		}
		a.segs = append(a.segs, segment{from: b.from, to: b.to, x0: x, x1: x + w})
		x += w
		if i < len(busy)-1 {
			x += gapWidth
		}
	}
	return a
}

// pos is where t is drawn, in percent.
func (a *axis) pos(t time.Time) float64 {
	for i, s := range a.segs {
		if t.After(s.to) {
			if i+1 < len(a.segs) && t.Before(a.segs[i+1].from) { // in the gap after s
				next := a.segs[i+1]
				return s.x1 + (next.x0-s.x1)*float64(t.Sub(s.to))/float64(next.from.Sub(s.to))
			}
			continue
		}
		if !t.After(s.from) {
			return s.x0
		}
		return s.x0 + (s.x1-s.x0)*float64(t.Sub(s.from))/float64(s.to.Sub(s.from))
	}
	if n := len(a.segs); n > 0 {
		return math.Min(100, a.segs[n-1].x1)
	}
	return 0
}

// gaps are the breaks of the axis.
func (a *axis) gaps() []gap {
	var out []gap
	for i := 1; i < len(a.segs); i++ {
		prev, s := a.segs[i-1], a.segs[i]
		out = append(out, gap{Left: prev.x1, Width: s.x0 - prev.x1, Label: "idle " + fmtMS(s.from.Sub(prev.to).Milliseconds())})
	}
	return out
}

// ticks are the axis marks: in each segment, at a round step of its own (offsets from the
// session's start), fewer in a narrow segment.
func (a *axis) ticks() []tick {
	var out []tick
	for _, s := range a.segs {
		n := max(1, int(8*(s.x1-s.x0)/100))
		for _, t := range ticks(s.to.Sub(s.from), n) {
			at := s.from.Add(t)
			out = append(out, tick{Left: a.pos(at), Label: "+" + fmtMS(at.Sub(a.start).Milliseconds())})
		}
	}
	return out
}
