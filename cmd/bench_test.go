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
// emulator's is in it too; profile with -cpuprofile and look at batch, retry and request).
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
