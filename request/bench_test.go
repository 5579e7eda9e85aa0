package request

import "testing"

func BenchmarkParseLineText(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = ParseLine(12, "GET /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d")
	}
}

func BenchmarkParseLineJSON(b *testing.B) {
	line := `{"id":"a","method":"PATCH","path":"/v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","body":{"flags":["Reviewed"]},"headers":{"X-A":"b"}}`
	b.ReportAllocs()
	for b.Loop() {
		_, _ = ParseLine(12, line)
	}
}
