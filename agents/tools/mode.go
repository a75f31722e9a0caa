package tools

import (
	"fmt"
	"strings"
)

// Mode is an approval mode: how far the agent may act without asking anyone. This type
// is the one owner of the vocabulary: the modes' names in stoke's --approval-mode (which
// are Qwen Code's), in Claude Code's permission modes, and their order.
//
//	mode       read  edit  exec   (read: read_file glob grep; edit: write_file edit; exec: shell)
//	plan       yes   no    no     read-only; never asks an Approver
//	default    yes   ask   ask    a headless run has nobody to ask unless an Approver is set
//	auto-edit  yes   yes   ask
//	yolo       yes   yes   yes
//
// Every mode offers every tool, so the model sees what exists (as Claude Code's plan mode
// does); a call the mode does not allow is refused with a tool error that names the
// --approval-mode value that would allow it, or put to the Approver when one is set.
type Mode string

// The approval modes, from least to most permissive.
const (
	ModePlan     Mode = "plan"
	ModeDefault  Mode = "default"
	ModeAutoEdit Mode = "auto-edit"
	ModeYolo     Mode = "yolo"
)

// Modes returns the approval modes, from least to most permissive.
func Modes() []Mode { return []Mode{ModePlan, ModeDefault, ModeAutoEdit, ModeYolo} }

// ModeNames returns the approval modes' names joined by sep, from least to most
// permissive: for help texts and messages.
func ModeNames(sep string) string {
	names := make([]string, 0, 4)
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	return strings.Join(names, sep)
}

// ParseMode parses an --approval-mode value. Besides stoke's names it accepts Claude Code's
// permission modes (acceptEdits is auto-edit, bypassPermissions is yolo); the empty string is
// the default mode.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	for _, m := range Modes() {
		if s == string(m) || s == m.PermissionMode() {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q: want plan, default, auto-edit or yolo", ErrUnknownMode, s)
}

// ParsePermissionMode parses a permission mode in Claude Code's vocabulary (its
// --permission-mode): default, acceptEdits, bypassPermissions and plan, and the aliases
// of default: dontAsk, which refuses what is not allowed without asking anyone (noPrompt),
// and manual (Claude Code v2.1.200). Stoke's own names are not accepted here.
func ParsePermissionMode(s string) (m Mode, noPrompt bool, err error) {
	switch s {
	case "dontAsk":
		return ModeDefault, true, nil
	case "manual":
		return ModeDefault, false, nil
	}
	for _, m := range Modes() {
		if s == m.PermissionMode() {
			return m, false, nil
		}
	}
	return "", false, fmt.Errorf("%w %q: want default, acceptEdits, plan, bypassPermissions or dontAsk", ErrUnknownMode, s)
}

// PermissionMode returns the mode's name in Claude Code's vocabulary (default |
// acceptEdits | plan | bypassPermissions), which Claude Agent SDK consumers switch on: the
// init line's permissionMode, the hooks' permission_mode. The empty mode is default; a
// mode stoke does not know is returned as it is.
func (m Mode) PermissionMode() string {
	switch m {
	case ModeAutoEdit:
		return "acceptEdits"
	case ModeYolo:
		return "bypassPermissions"
	case "":
		return string(ModeDefault)
	}
	return string(m)
}

// Rank orders the modes by what they allow: plan 0 < default 1 < auto-edit 2 < yolo 3. An
// unknown mode ranks -1.
func (m Mode) Rank() int {
	switch m {
	case ModePlan:
		return 0
	case ModeDefault:
		return 1
	case ModeAutoEdit:
		return 2
	case ModeYolo:
		return 3
	}
	return -1
}

// AtMost reports whether m is a mode stoke knows that allows no more than ceiling. An
// unknown ceiling counts as the lowest mode, plan.
func (m Mode) AtMost(ceiling Mode) bool {
	return m.Rank() >= 0 && m.Rank() <= max(ceiling.Rank(), 0)
}

// CappedAt is m, or ceiling where ceiling allows less ("" is no ceiling): the mode an
// agent whose definition sets ceiling applies under a session in mode m.
func (m Mode) CappedAt(ceiling Mode) Mode {
	if ceiling != "" && ceiling.Rank() < m.Rank() {
		return ceiling
	}
	return m
}

// Allows reports whether a call of the given kind runs without asking anyone.
func (m Mode) Allows(k Kind) bool {
	switch k {
	case KindRead:
		return m.Rank() >= 0
	case KindEdit:
		return m.Rank() >= ModeAutoEdit.Rank()
	case KindExec:
		return m == ModeYolo
	}
	return false
}
