package report

import (
	"math"
	"testing"
	"time"
)

// A session resumed two hours later is drawn as two runs to scale with a break between
// them, not as two slivers at the ends of an axis; a session without such a stretch is
// drawn linearly.
func TestAxisBreaksIdleStretches(t *testing.T) {
	t.Parallel()
	sec := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	turns := func(spans ...[2]int) Report {
		r := Report{Start: sec(spans[0][0]), End: sec(spans[len(spans)-1][1])}
		lane := Lane{ID: ParentLane, Kind: KindParent}
		for i, s := range spans {
			lane.Turns = append(lane.Turns, Turn{N: i + 1, Start: sec(s[0]), End: sec(s[1])})
		}
		r.Lanes = []Lane{lane}
		return r
	}
	approx := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

	r := turns([2]int{0, 10}, [2]int{10, 30})
	a := newAxis(&r)
	if len(a.gaps()) != 0 || !approx(a.pos(sec(15)), 50) || !approx(a.pos(sec(30)), 100) {
		t.Errorf("a busy session: gaps %v, pos(15 s) %v", a.gaps(), a.pos(sec(15)))
	}

	r = turns([2]int{0, 30}, [2]int{7200, 7230})
	a = newAxis(&r)
	gaps := a.gaps()
	if len(gaps) != 1 || !approx(gaps[0].Width, gapWidth) || gaps[0].Label != "idle 1 h 59 m" {
		t.Fatalf("gaps %+v", gaps)
	}
	half := (100 - gapWidth) / 2
	for _, c := range []struct {
		at   time.Time
		want float64
	}{{sec(0), 0}, {sec(15), half / 2}, {sec(30), half}, {sec(3615), half + gapWidth/2}, {sec(7200), half + gapWidth}, {sec(7230), 100}} {
		if got := a.pos(c.at); !approx(got, c.want) {
			t.Errorf("pos(%v) = %v, want %v", c.at.Sub(base), got, c.want)
		}
	}
	prev := -1.0
	for _, tk := range a.ticks() {
		if tk.Left < prev || tk.Left > 100 {
			t.Errorf("ticks out of order: %+v", a.ticks())
		}
		prev = tk.Left
	}
}
