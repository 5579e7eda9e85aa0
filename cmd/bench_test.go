package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/output"
)

// BenchmarkBatch runs `brellium batch --concurrency 32` over 2,000 GETs against an in-process
// emulator with no effective limit, through each HTTP client: the client's cost per request (the
// emulator's is in it too; profile with -cpuprofile and look at cmd, retry and request).
func BenchmarkBatch(b *testing.B) {
	for _, client := range []string{"fast", "net"} {
		b.Run(client, func(b *testing.B) {
			em := startEmulator(b, emulator.Config{Burst: 1 << 30, Rate: 1e9, Audits: 1000})
			var lines []string
			for i := 1; i <= 2000; i++ {
				lines = append(lines, "GET /v2/audits/"+emulator.AuditID(i%1000+1))
			}
			in := filepath.Join(b.TempDir(), "in.txt")
			_ = os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
			env := map[string]string{"BRELLIUM_BASE_URL": em.URL, "BRELLIUM_ACCESS_TOKEN": "t", "BRELLIUM_BATCH_CLIENT": client}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ios, _, _, _ := output.Test()
				f := &Factory{IOStreams: ios, Getenv: func(k string) string { return env[k] }}
				if code := Run(context.Background(), f, []string{"batch", in, "--concurrency", "32", "--limiter", "off", "-o", os.DevNull}); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(float64(2000*b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkResultEncoding is the cost of one batch result line.
func BenchmarkResultEncoding(b *testing.B) {
	r := &batchResult{Line: 12, ID: "a", Method: "GET", Path: "/v2/audits/" + emulator.SampleAuditID, Status: 200, Outcome: "ok",
		Attempts: 1, RequestID: "9c3f1a7e-5b2d-4e8f-a1c6-2d7b8e9f0a1b", ElapsedMS: 35,
		Body: []byte(`{"audit_id":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","object":"audit","status":"complete","flags":["Failed","Missing Signature"],"display_info":[{"label":"Patient","value":"Sample Patient"}],"people":[],"responses":[]}`)}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.appendJSON(nil)
	}
}
