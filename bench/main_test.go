package bench

import (
	"os"
	"testing"

	"github.com/goredisson/goredisson/integration/rediscontainer"
	"github.com/goredisson/goredisson/internal/redistest"
)

// TestMain runs Redis as a plain redis-server child process unless GOREDISSON_REDIS says
// otherwise: in container mode every packet also crosses Docker's userland proxy, which
// adds its own latency and CPU to what these measurements are about.
func TestMain(m *testing.M) {
	if os.Getenv(redistest.EnvMode) == "" {
		_ = os.Setenv(redistest.EnvMode, redistest.ModeProcess)
	}
	rediscontainer.Use()
	redistest.Main(m)
}
