package builtin_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/providers"
)

func procCPU(pid int) time.Duration {
	raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	f := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZCPU(t *testing.T) {
	if os.Getenv("ZZCPU") == "" {
		t.Skip()
	}
	for _, mode := range strings.Split(os.Getenv("ZZCPU"), ",") {
		exe := ""
		if mode == "plugin" {
			exe = os.Args[0]
		}
		w := workload{name: providers.Simulated, cfg: providers.Config{"seed": "5", "objects": "20000"}, src: "files", pageSize: 1000}
		reg := builtinRegistry(&testing.B{}, exe)
		p, err := reg.Open(context.Background(), w.name, w.cfg)
		if err != nil {
			t.Fatal(err)
		}
		pid := 0
		if mode == "plugin" {
			r, _ := reg.Lookup(providers.Simulated)
			pid = r.Closer.(interface{ Pid() int }).Pid()
		}
		listAll(&testing.B{}, p, workload{src: "files", pageSize: 1000})
		h0, p0, t0 := selfCPU(), time.Duration(0), time.Now()
		if pid != 0 {
			p0 = procCPU(pid)
		}
		n := 0
		for range 10 {
			n += listAll(&testing.B{}, p, w)
		}
		wall := time.Since(t0)
		h := selfCPU() - h0
		var pc time.Duration
		if pid != 0 {
			pc = procCPU(pid) - p0
		}
		t.Logf("%s: %d objs wall %.2fus/obj host cpu %.2fus/obj plugin cpu %.2fus/obj", mode, n, float64(wall.Nanoseconds())/float64(n)/1e3, float64(h.Nanoseconds())/float64(n)/1e3, float64(pc.Nanoseconds())/float64(n)/1e3)
		reg.Close()
	}
}
