package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
)

// The hosts of docs/wasm.md beside wasmhost, and what it says a guest is
// given and cannot do: each test runs the real programs.

// wazeroCLI is the guest run by wazero's CLI, as docs/wasm.md runs it,
// with -cachedir wasmhost's cache: a CLI of the wazero version wasmhost
// embeds (v1.12.0) finds there the guest wasmhost compiled, in the
// version's own directory (wazero-v1.12.0-amd64-linux), and another
// version compiles into its own. It skips the test when wazero is missing.
func wazeroCLI(t *testing.T) kind {
	wazero, err := exec.LookPath("wazero")
	if err != nil {
		t.Skip("wazero is not installed: go install github.com/tetratelabs/wazero/cmd/wazero@v1.12.0")
	}
	return kind{name: "wazero-cli", mech: "file", command: func(dir string, args ...string) *exec.Cmd {
		return exec.Command(wazero, append([]string{"run", "-cachedir", bin.cache, "-mount", "/proc:/proc:ro", "-mount", dir + ":" + dir,
			filepath.Join(bin.dir, "guest.wasm")}, args...)...)
	}}
}

// The wazero CLI hosts the agent: it takes a free lock, recorded under the
// wazero process's pid, with the file mechanism.
func TestWazeroCLI(t *testing.T) { takesFree(t, wazeroCLI(t)) }

// wasmhost, wazero's CLI and Node.js give a guest real clocks and
// randomness (wazero's Go API defaults to a fake clock and a fixed seed):
// the stamp a guest writes records the time it took the lock, and two
// guests, one after the other, draw different nonces.
func TestGuestClockAndRandomness(t *testing.T) {
	t.Run("wasmhost", func(t *testing.T) { clockAndRandomness(t, wasip1Kind) })
	t.Run("wazero-cli", func(t *testing.T) { clockAndRandomness(t, wazeroCLI(t)) })
	t.Run("node", func(t *testing.T) { clockAndRandomness(t, jsKind) })
}

func clockAndRandomness(t *testing.T, k kind) {
	ctx, dir := testContext(t), t.TempDir()
	path := filepath.Join(dir, "x.lock")
	var nonces []string
	for range 2 {
		before := time.Now()
		g := start(t, k, dir, "-hold", path)
		g.expect(ctx, "holds")
		after := time.Now()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := lockrec.Parse(b)
		if err != nil {
			t.Fatalf("%s's stamp %q: %v", k.name, b, err)
		}
		// A second either side is far below what a fake clock is off by.
		if rec.AcquiredAt.Before(before.Add(-time.Second)) || rec.AcquiredAt.After(after.Add(time.Second)) {
			t.Errorf("%s's stamp says it took the lock at %v; want between %v and %v (a real clock)", k.name, rec.AcquiredAt, before, after)
		}
		nonces = append(nonces, rec.Nonce)
		g.stdin.Close()
		g.expect(ctx, "released")
	}
	if nonces[0] == "" || nonces[0] == nonces[1] {
		t.Errorf("two %s guests drew the nonces %q; want two different ones (real randomness)", k.name, nonces)
	}
}

// proclock itself, built for wasip1 and run by wasmhost: run refuses to
// start a command, and status names the holder but leaves out when its
// process started, which the same status run natively tells.
func TestProclockInGuest(t *testing.T) {
	ctx, dir := testContext(t), t.TempDir()
	path := filepath.Join(dir, "x.lock")
	guest := func(args ...string) (stdout string, code int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin.dir, "wasmhost"), append([]string{"-cache", bin.cache, filepath.Join(bin.dir, "proclock.wasm"), dir}, args...)...)
		var errb strings.Builder
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("proclock %q in a guest: exit %d, stdout %q, stderr %q", args, code, out, errb.String())
		return string(out) + errb.String(), code
	}
	if bin.err != nil {
		t.Fatal(bin.err)
	}

	const refusal = "starting a command is not possible on wasip1"
	if out, code := guest("run", path, "--", "true"); code != 2 || !strings.Contains(out, refusal) {
		t.Errorf("proclock run in a guest: exit %d, %q; want exit 2 saying %q", code, out, refusal)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("proclock run in a guest left %s (%v); want the lock untouched", path, err)
	}

	h := start(t, nativeKind("auto"), dir, "-hold", path)
	h.expect(ctx, "holds")
	holder := func(out string) map[string]any {
		t.Helper()
		var st struct {
			State  string         `json:"state"`
			Holder map[string]any `json:"holder"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil || st.State != "held" || st.Holder == nil {
			t.Fatalf("status --json said %q (%v); want a held lock with its holder", out, err)
		}
		return st.Holder
	}
	out, code := guest("status", "--json", path)
	if code != 1 {
		t.Errorf("proclock status of a held lock in a guest exited %d; want 1 (held)", code)
	}
	inGuest := holder(out)
	if inGuest["pid"] != float64(h.pid()) {
		t.Errorf("status in a guest names pid %v; want the holder's, %d", inGuest["pid"], h.pid())
	}
	if _, ok := inGuest["processStart"]; ok {
		t.Errorf("status in a guest gave the holder's process start %v; want none (a guest does not turn clock ticks into a date)", inGuest["processStart"])
	}
	native, err := exec.Command(filepath.Join(bin.dir, "proclock"), "status", "--json", path).Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("native proclock status: %v", err)
	}
	if _, ok := holder(string(native))["processStart"]; !ok {
		t.Errorf("native status --json said %s; want the holder's processStart", native)
	}
	h.stdin.Close()
	h.expect(ctx, "released")
}
