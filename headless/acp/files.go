package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents/tools"
)

// fileClient is what the file tools need of the connection.
type fileClient interface {
	// ReadTextFile and WriteTextFile are the client's fs/read_text_file and
	// fs/write_text_file; they return when the client answered or ctx ended.
	ReadTextFile(ctx context.Context, req sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, req sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error)
}

// files are the client's files for the file tools of a session's workspace (tools.Files):
// read_file and edit read the editor's buffer, unsaved changes included, when the client
// offers fs.readTextFile; write_file and edit write through the editor when it offers
// fs.writeTextFile. What the client does not offer is read or written on disk.
type files struct {
	conn        fileClient
	id          sdk.SessionId
	read, write bool
}

// newFiles returns the session's files, or nil when the client offers neither.
func newFiles(conn fileClient, id sdk.SessionId, caps sdk.ClientCapabilities) *files {
	if !caps.Fs.ReadTextFile && !caps.Fs.WriteTextFile {
		return nil
	}
	return &files{conn: conn, id: id, read: caps.Fs.ReadTextFile, write: caps.Fs.WriteTextFile}
}

// ReadTextFile implements tools.Files.
func (f *files) ReadTextFile(ctx context.Context, path string) (string, error) {
	if !f.read {
		return "", tools.ErrOnDisk
	}
	resp, err := f.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: f.id, Path: path})
	if err != nil {
		return "", err
	}
	return resp.Content, nil
}

// WriteTextFile implements tools.Files.
func (f *files) WriteTextFile(ctx context.Context, path, content string) error {
	if !f.write {
		return tools.ErrOnDisk
	}
	_, err := f.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: f.id, Path: path, Content: content})
	return err
}
