package tools

import (
	"errors"
	"testing"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"plan", ModePlan, true},
		{"default", ModeDefault, true},
		{"", ModeDefault, true},
		{"auto-edit", ModeAutoEdit, true},
		{"acceptEdits", ModeAutoEdit, true},
		{"yolo", ModeYolo, true},
		{"bypassPermissions", ModeYolo, true},
		{"YOLO", "", false},
		{"auto_edit", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMode(tt.in)
			if got != tt.want || (err == nil) != tt.ok {
				t.Errorf("ParseMode(%q) = %q, %v", tt.in, got, err)
			}
			if !tt.ok && !errors.Is(err, ErrUnknownMode) {
				t.Errorf("error %v is not ErrUnknownMode", err)
			}
		})
	}
}

func TestModeRankAndAllows(t *testing.T) {
	t.Parallel()
	for i, m := range Modes() {
		if m.Rank() != i {
			t.Errorf("%s.Rank() = %d, want %d", m, m.Rank(), i)
		}
	}
	if Mode("x").Rank() != -1 || Mode("x").Allows(KindRead) {
		t.Error("an unknown mode ranks or allows")
	}
	want := map[Mode][3]bool{ // read, edit, exec
		ModePlan:     {true, false, false},
		ModeDefault:  {true, false, false},
		ModeAutoEdit: {true, true, false},
		ModeYolo:     {true, true, true},
	}
	for m, w := range want {
		for k, allowed := range w {
			if got := m.Allows(Kind(k)); got != allowed {
				t.Errorf("%s.Allows(%s) = %v, want %v", m, Kind(k), got, allowed)
			}
		}
	}
}

func TestParsePermissionMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		want     Mode
		noPrompt bool
		ok       bool
	}{
		{"default", ModeDefault, false, true},
		{"manual", ModeDefault, false, true},
		{"dontAsk", ModeDefault, true, true},
		{"acceptEdits", ModeAutoEdit, false, true},
		{"bypassPermissions", ModeYolo, false, true},
		{"plan", ModePlan, false, true},
		{"auto-edit", "", false, false}, // stoke's names are not Claude Code's
		{"yolo", "", false, false},
		{"auto", "", false, false},
		{"", "", false, false},
		{"dontask", "", false, false},
	}
	for _, tt := range tests {
		m, noPrompt, err := ParsePermissionMode(tt.in)
		if m != tt.want || noPrompt != tt.noPrompt || (err == nil) != tt.ok {
			t.Errorf("ParsePermissionMode(%q) = %q, %v, %v; want %q, %v, ok %v", tt.in, m, noPrompt, err, tt.want, tt.noPrompt, tt.ok)
		}
		if !tt.ok && !errors.Is(err, ErrUnknownMode) {
			t.Errorf("ParsePermissionMode(%q): error %v is not ErrUnknownMode", tt.in, err)
		}
	}
}

func TestPermissionModeName(t *testing.T) {
	t.Parallel()
	for in, want := range map[Mode]string{
		"": "default", ModeDefault: "default", ModePlan: "plan", ModeAutoEdit: "acceptEdits", ModeYolo: "bypassPermissions", "odd": "odd",
	} {
		if got := in.PermissionMode(); got != want {
			t.Errorf("Mode(%q).PermissionMode() = %q, want %q", in, got, want)
		}
	}
	// Every mode's two names parse back to it.
	for _, m := range Modes() {
		if got, err := ParseMode(m.PermissionMode()); got != m || err != nil {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", m.PermissionMode(), got, err, m)
		}
		if got, _, err := ParsePermissionMode(m.PermissionMode()); got != m || err != nil {
			t.Errorf("ParsePermissionMode(%q) = %q, %v; want %q", m.PermissionMode(), got, err, m)
		}
	}
}

func TestModeAtMost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m, ceiling Mode
		want       bool
	}{
		{ModePlan, ModePlan, true},
		{ModeDefault, ModeAutoEdit, true},
		{ModeAutoEdit, ModeAutoEdit, true},
		{ModeYolo, ModeAutoEdit, false},
		{ModeDefault, ModePlan, false},
		{ModePlan, "bogus", true}, // an unknown ceiling is plan
		{ModeDefault, "bogus", false},
		{"bogus", ModeYolo, false}, // an unknown mode is never within
	}
	for _, tt := range tests {
		if got := tt.m.AtMost(tt.ceiling); got != tt.want {
			t.Errorf("%q.AtMost(%q) = %v, want %v", tt.m, tt.ceiling, got, tt.want)
		}
	}
	if got := ModeNames(" | "); got != "plan | default | auto-edit | yolo" {
		t.Errorf("ModeNames = %q", got)
	}
}

func TestModeCappedAt(t *testing.T) {
	for _, tt := range []struct{ m, ceiling, want Mode }{
		{ModeYolo, "", ModeYolo},
		{ModeYolo, ModeDefault, ModeDefault},
		{ModeDefault, ModeYolo, ModeDefault},
		{ModePlan, ModeAutoEdit, ModePlan},
		{ModeAutoEdit, ModeAutoEdit, ModeAutoEdit},
	} {
		if got := tt.m.CappedAt(tt.ceiling); got != tt.want {
			t.Errorf("%q.CappedAt(%q) = %q, want %q", tt.m, tt.ceiling, got, tt.want)
		}
	}
}
