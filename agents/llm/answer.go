package llm

// DefaultMaxAnswerBytes is the cap on one answer of a model (its text plus its tool-call
// arguments) when none is configured: far above what any model writes in one reply, far
// below what would strain the process that holds, stores and resends it.
const DefaultMaxAnswerBytes = 16 << 20

// AnswerCap counts the bytes of one answer against a cap. The zero value, and a cap of 0
// or less, counts without a bound. Not safe for concurrent use: one per call.
type AnswerCap struct {
	Limit int64 // the cap; <= 0: none
	used  int64
}

// Take counts n more bytes of the answer and reports whether it is still within the cap.
func (c *AnswerCap) Take(n int) bool {
	c.used += int64(n)
	return c.Limit <= 0 || c.used <= c.Limit
}

// MaxAnswer is a provider's cap setting: 0 means DefaultMaxAnswerBytes, a negative value
// no cap.
func MaxAnswer(configured int64) int64 {
	switch {
	case configured == 0:
		return DefaultMaxAnswerBytes
	case configured < 0:
		return 0
	}
	return configured
}
