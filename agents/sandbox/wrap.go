package sandbox

import "sync"

// Wrapped is a command line Wrap made for another process to run (an ACP client's
// terminal), and the guard's part around it.
type Wrapped struct {
	// Args is the command line to run, stoke's binary first: the wrapper confines
	// and supervises the command given to Wrap, as Run's helper does.
	Args []string

	s      *Sandbox
	root   string
	before []string // what the guard put back before the command
	once   sync.Once
}

// Done is called once the command has ended: the guard checks the workspace again, and
// Done returns what it put back before and after the command, one line each, as Run's
// Outcome.Notes. Later calls return nothing; so does a nil Wrapped.
func (w *Wrapped) Done() []string {
	if w == nil || w.s == nil {
		return nil
	}
	var notes []string
	w.once.Do(func() {
		w.s.mu.Lock()
		w.s.outside--
		w.s.mu.Unlock()
		notes = append(w.before, w.s.guard.check(w.root, true)...)
	})
	return notes
}
