package batch

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them; fasthttp's idle-connection
// sweeper aside (a test sends through the fast client), which ends on its own within
// MaxIdleConnDuration of its client's last connection closing.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"))
}
