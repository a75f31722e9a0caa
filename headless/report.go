package headless

import (
	"fmt"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/report"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
)

// recordTurn ends a parent turn in the parent's transcript with a turn record (its start
// and status), so that a report tells the parent's turns apart (agents/report); a turn
// that could not run (err) records nothing.
func (s *session) recordTurn(start time.Time, res runtime.TurnResult, err error) {
	if s.chat == nil || err != nil {
		return
	}
	status := agents.StatusFailed
	switch res.Reason {
	case runtime.ReasonCompleted:
		status = agents.StatusCompleted
	case runtime.ReasonCancelled:
		status = agents.StatusPaused // interrupted: a signal, --timeout, an SDK host's interrupt
	}
	rec := store.Record{Type: store.RecordTurn, Status: string(status), Start: start.UTC()}
	if werr := s.chat.Write(rec); werr != nil {
		s.opts.Logger.Warn("record the parent's turn", "err", werr)
	}
}

// writeReport writes the run's report (Options.Report) from the session as stored, once
// the session is closed, however the run ended (runErr). A report that cannot be written
// fails a run that succeeded; otherwise the run's own error stands, and the report's is
// logged.
func (s *session) writeReport(runErr error) error {
	if s.opts.Report == "" {
		return runErr
	}
	err := s.renderReport()
	if err == nil {
		return runErr
	}
	s.opts.Logger.Error("write the report", "file", s.opts.Report, "err", err)
	if runErr != nil {
		return runErr
	}
	return fmt.Errorf("%w: --report: %w", ErrRunFailed, err)
}

func (s *session) renderReport() error {
	if s.opened.sess == nil {
		return fmt.Errorf("no session is stored (--no-session-persistence), so there is nothing to report")
	}
	info, warning, err := s.opened.sess.LoadInfo(s.opts.CWD)
	if err != nil {
		return err
	}
	rep, err := report.Load(store.Stored{Session: s.opened.sess, Info: info, Warning: warning},
		report.Options{Prices: s.opts.Prices, Redact: s.opts.Secrets.Redact, Generator: s.opts.Version})
	if err != nil {
		return err
	}
	return report.WriteFile(s.opts.Report, rep, report.FormatHTML)
}
