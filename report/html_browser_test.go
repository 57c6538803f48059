//go:build unix

package report

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromium returns the path of a Chromium to test in, skipping the test
// when there is none (make test installs Debian's chromium when it can).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (Debian: apt-get install chromium; make test does it as root)")
	return ""
}

// runChromium runs headless Chromium on url with args, offline and with a
// profile of its own, within two minutes; the whole process group is killed
// at the deadline.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// near reports whether c is within d of want in each channel.
func near(c color.Color, want color.RGBA, d int) bool {
	r, g, b, _ := c.RGBA()
	diff := func(x uint32, y uint8) int { return max(int(x>>8)-int(y), int(y)-int(x>>8)) }
	return diff(r, want.R) <= d && diff(g, want.G) <= d && diff(b, want.B) <= d
}

// TestHTMLInChromium opens the HTML report of a saved naive run (seed 000
// first) in headless Chromium: the page renders, offline, to a screenshot
// that is not blank and shows the replays' red and the faults' orange, and
// the DOM Chromium built holds seed 000's sequence diagram. With
// REPLAYCHECK_SCREENSHOT=FILE the screenshot is kept there.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, naiveRun(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, url, "--screenshot="+shot, "--window-size=1400,2000", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if keep := os.Getenv("REPLAYCHECK_SCREENSHOT"); keep != "" {
		if raw, err := os.ReadFile(shot); err == nil {
			if err := os.WriteFile(keep, raw, 0o644); err != nil {
				t.Errorf("keeping the screenshot: %v", err)
			}
		}
	}
	bounds := img.Bounds()
	if bounds.Dx() != 1400 || bounds.Dy() != 2000 {
		t.Errorf("screenshot %v, want 1400x2000", bounds.Size())
	}
	white := color.RGBA{255, 255, 255, 255}
	var ink, red, orange, band int
	colors := map[color.Color]bool{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			c := img.At(x, y)
			if len(colors) < 1000 {
				colors[c] = true
			}
			switch {
			case near(c, white, 8):
			case near(c, color.RGBA{0xc6, 0x28, 0x28, 255}, 40):
				red++
			case near(c, color.RGBA{0xe6, 0x51, 0x00, 255}, 40):
				orange++
			case near(c, color.RGBA{0xfd, 0xec, 0xea, 255}, 4):
				band++
			}
			if !near(c, white, 8) {
				ink++
			}
		}
	}
	total := bounds.Dx() * bounds.Dy()
	t.Logf("screenshot: %d colors (capped at 1000), %.1f%% ink, %d red, %d orange, %d replay-band pixels", len(colors), 100*float64(ink)/float64(total), red, orange, band)
	if len(colors) < 50 || ink < total/50 {
		t.Errorf("the screenshot looks blank: %d colors, %d of %d pixels not white", len(colors), ink, total)
	}
	if red < 500 || orange < 500 || band < 5000 {
		t.Errorf("the screenshot lacks the marks: %d red, %d orange, %d replay-band pixels", red, orange, band)
	}

	dom := string(runChromium(t, bin, url, "--dump-dom"))
	for _, want := range []string{`<svg class="seq"`, `class="lifebox"`, "REPLAY #2 · first ran at +", "FAULT: follow_up respond 500 always",
		"translated: the app sent Anthropic Messages", "What the app got"} {
		if !strings.Contains(dom, want) {
			t.Errorf("Chromium's DOM lacks %q", want)
		}
	}
	if n, want := strings.Count(dom, `class="lifebox"`), 4*len(naiveRun(t).Results); n != want {
		t.Errorf("Chromium's DOM has %d lifeline heads, want %d (4 per diagram)", n, want)
	}
	if strings.Contains(dom, "<script") {
		t.Error("Chromium's DOM holds a script")
	}
}
