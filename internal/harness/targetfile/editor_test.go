package targetfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/targettest"
)

// yamlServer is the YAML language server behind the Red Hat YAML extension
// of VS Code, pinned by schemas/editor/package-lock.json and installed by
// make yaml-language-server.
const yamlServer = "../../../schemas/editor/node_modules/yaml-language-server/bin/yaml-language-server"

// TestEditorValidatesModeline opens the shipped scenario and target files in
// the YAML language server an editor runs, offline (in a network namespace
// with loopback only where unshare -rn works, and with the schema store
// off), as an editor opens them: the modeline's relative path is all that
// names the schema. Each shipped file gets no diagnostics (and a schema that
// does not load would be one); a scenario with a field of the wrong type or
// an unknown field gets a diagnostic at that line.
func TestEditorValidatesModeline(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH; the YAML language server runs on node")
	}
	if _, err := os.Stat(yamlServer); err != nil {
		t.Skipf("the YAML language server is not installed (make yaml-language-server, or npm ci --prefix schemas/editor): %v", err)
	}
	// Canceled after the server's cleanup (cleanups run last first), so that
	// it stops by LSP's shutdown and exit rather than being killed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	argv := []string{node, yamlServer, "--stdio"}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Logf("running the server with the network (the schema store is off): %v", err)
	} else {
		argv = targettest.InLoopbackNamespace(argv...)
	}
	ls := startLanguageServer(t, ctx, argv)

	files := append(targettest.Shipped(t, "../../../scenarios/*/*.yaml"), targettest.Shipped(t, "../../../targets/*.yaml")...)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if d := ls.diagnose(t, ctx, f, string(src)); len(d) > 0 {
			t.Errorf("%s: the editor reports %v, want no diagnostics", f, d)
		}
	}

	// Broken copies of a shipped scenario, opened at a path next to it (the
	// server reads the text from the editor, not the disk) so that the
	// modeline's relative path resolves.
	const shipped = "../../../scenarios/clients/follow-up-500-always.yaml"
	src, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, line, with, want string
	}{
		{"wrong type", "name: ", "name: 42", `Incorrect type. Expected "string"`},
		{"unknown field", "retry_after_hint: ", "retry_after: 1ms", "Property retry_after is not allowed"},
		{"value not in the enum", "  rules: [", "  rules: [no-replay-after-dispatch, errors-surface]", "Value is not accepted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := strings.Split(string(src), "\n")
			at := -1
			for i, l := range lines {
				if strings.HasPrefix(l, tt.line) {
					at = i
					lines[i] = tt.with
					break
				}
			}
			if at < 0 {
				t.Fatalf("%s has no line starting with %q", shipped, tt.line)
			}
			file := filepath.Join(filepath.Dir(shipped), "editor-test-"+strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			d := ls.diagnose(t, ctx, file, strings.Join(lines, "\n"))
			found := false
			for _, x := range d {
				if x.Range.Start.Line == at && strings.Contains(x.Message, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("line %d %q: the editor reports %v, want %q at line %d", at+1, tt.with, d, tt.want, at+1)
			}
		})
	}
}

// diagnostic is an LSP diagnostic: where and what.
type diagnostic struct {
	Range struct {
		Start struct{ Line, Character int }
	}
	Message string
}

func (d diagnostic) String() string {
	return fmt.Sprintf("%d:%d: %s", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Message)
}

// languageServer is the client end of a language server over stdio: LSP's
// JSON-RPC messages framed by a Content-Length header.
type languageServer struct {
	mu      sync.Mutex // guards in and the writes
	in      io.Writer
	nextID  int
	replies map[int]chan json.RawMessage
	// diagnostics carries each textDocument/publishDiagnostics by URI.
	diagnostics map[string]chan []diagnostic
}

// yamlSettings are the settings the client gives the YAML language server:
// validation on, schemas only from modelines (no schema store, no
// downloads).
var yamlSettings = map[string]any{
	"validate":    true,
	"hover":       false,
	"completion":  false,
	"format":      map[string]any{"enable": false},
	"schemaStore": map[string]any{"enable": false, "url": ""},
	"schemas":     map[string]any{},
}

// startLanguageServer runs argv, initializes it as an editor would and
// stops it when the test ends.
func startLanguageServer(t *testing.T, ctx context.Context, argv []string) *languageServer {
	t.Helper()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ls := &languageServer{in: in, replies: map[int]chan json.RawMessage{}, diagnostics: map[string]chan []diagnostic{}}
	done := make(chan error, 1)
	go func() { done <- ls.read(bufio.NewReader(out)) }()
	t.Cleanup(func() {
		// LSP's way to stop: shutdown, then exit; then the end of its input.
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ls.call(t, stop, "shutdown", nil)
		ls.notify(t, "exit", nil)
		in.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		cmd.Wait()
		if t.Failed() {
			t.Logf("the language server's stderr:\n%s", stderr.Bytes())
		}
	})

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ls.call(t, ctx, "initialize", map[string]any{
		"processId": os.Getpid(),
		"rootUri":   fileURI(root),
		"capabilities": map[string]any{
			"workspace":    map[string]any{"configuration": true},
			"textDocument": map[string]any{"publishDiagnostics": map[string]any{}},
		},
	})
	ls.notify(t, "initialized", map[string]any{})
	ls.notify(t, "workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"yaml": yamlSettings}})
	return ls
}

// diagnose opens file with text and returns the diagnostics the server
// publishes for it.
func (ls *languageServer) diagnose(t *testing.T, ctx context.Context, file, text string) []diagnostic {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	uri := fileURI(abs)
	ch := ls.diagnosticsOf(uri)
	ls.notify(t, "textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "yaml", "version": 1, "text": text,
	}})
	defer ls.notify(t, "textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	select {
	case d := <-ch:
		return d
	case <-ctx.Done():
		t.Fatalf("%s: no diagnostics published: %v", file, ctx.Err())
		return nil
	}
}

// diagnosticsOf returns the channel of the diagnostics published for uri.
func (ls *languageServer) diagnosticsOf(uri string) chan []diagnostic {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ch, ok := ls.diagnostics[uri]
	if !ok {
		ch = make(chan []diagnostic, 16)
		ls.diagnostics[uri] = ch
	}
	return ch
}

// call sends a request and waits for its result.
func (ls *languageServer) call(t *testing.T, ctx context.Context, method string, params any) json.RawMessage {
	t.Helper()
	ls.mu.Lock()
	ls.nextID++
	id := ls.nextID
	reply := make(chan json.RawMessage, 1)
	ls.replies[id] = reply
	err := ls.writeLocked(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	ls.mu.Unlock()
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case r := <-reply:
		return r
	case <-ctx.Done():
		t.Fatalf("%s: no reply: %v", method, ctx.Err())
		return nil
	}
}

// notify sends a notification.
func (ls *languageServer) notify(t *testing.T, method string, params any) {
	t.Helper()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err := ls.writeLocked(map[string]any{"jsonrpc": "2.0", "method": method, "params": params}); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// writeLocked writes one framed message; ls.mu is held.
func (ls *languageServer) writeLocked(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(ls.in, "Content-Length: %d\r\n\r\n%s", len(b), b)
	return err
}

// maxMessage bounds a message the server sends.
const maxMessage = 8 << 20

// read reads the server's messages until its output ends: replies go to
// their caller, diagnostics to their URI's channel, and the server's own
// requests get an answer (the YAML settings for workspace/configuration,
// null for the rest).
func (ls *languageServer) read(r *bufio.Reader) error {
	for {
		n := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length:"); ok {
				if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
					return fmt.Errorf("header %q: %v", line, err)
				}
			}
		}
		if n < 0 || n > maxMessage {
			return fmt.Errorf("a message of length %d", n)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		var msg struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
			Result json.RawMessage  `json:"result"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			return fmt.Errorf("message %s: %v", body, err)
		}
		switch {
		case msg.Method == "textDocument/publishDiagnostics":
			var p struct {
				URI         string       `json:"uri"`
				Diagnostics []diagnostic `json:"diagnostics"`
			}
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				return fmt.Errorf("diagnostics %s: %v", msg.Params, err)
			}
			select {
			case ls.diagnosticsOf(p.URI) <- p.Diagnostics:
			default: // nobody waits for that many
			}
		case msg.Method != "" && msg.ID != nil:
			var result any
			if msg.Method == "workspace/configuration" {
				var p struct{ Items []struct{ Section string } }
				if err := json.Unmarshal(msg.Params, &p); err != nil {
					return fmt.Errorf("workspace/configuration %s: %v", msg.Params, err)
				}
				items := make([]any, len(p.Items))
				for i, it := range p.Items {
					if it.Section == "yaml" {
						items[i] = yamlSettings
					}
				}
				result = items
			}
			ls.mu.Lock()
			err := ls.writeLocked(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
			ls.mu.Unlock()
			if err != nil {
				return err
			}
		case msg.Method == "" && msg.ID != nil:
			var id int
			if err := json.Unmarshal(*msg.ID, &id); err != nil {
				return fmt.Errorf("reply id %s: %v", *msg.ID, err)
			}
			ls.mu.Lock()
			reply := ls.replies[id]
			delete(ls.replies, id)
			ls.mu.Unlock()
			if reply != nil {
				reply <- msg.Result
			}
		}
	}
}

// fileURI is the file: URI of an absolute path.
func fileURI(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}
