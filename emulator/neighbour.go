package emulator

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Neighbour is another integration of the organization, drawing from the same bucket as
// brellium: Burst requests at once, every Burst/Rate seconds, so Rate a second on average, in
// bursts as a real integration's work comes. Its refused requests are counted, not repeated.
type Neighbour struct {
	Rate  float64
	Burst int
}

// ParseNeighbour reads --neighbour RATE[,burst=B]; the burst defaults to a third of the rate
// (at least 1): a burst every third of a second.
func ParseNeighbour(s string) (Neighbour, error) {
	rate, rest, _ := strings.Cut(strings.TrimSpace(s), ",")
	r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
	if err != nil || !(r > 0) || r > 1e5 {
		return Neighbour{}, fmt.Errorf("invalid --neighbour %q: want RATE[,burst=B], a rate above 0 such as 15", s)
	}
	n := Neighbour{Rate: r, Burst: max(1, int(r/3))}
	if rest != "" {
		v, ok := strings.CutPrefix(strings.TrimSpace(rest), "burst=")
		b, err := strconv.Atoi(v)
		if !ok || err != nil || b < 1 {
			return Neighbour{}, fmt.Errorf("invalid --neighbour %q: want RATE[,burst=B] with B at least 1", s)
		}
		n.Burst = b
	}
	return n, nil
}

// Every is the time between the neighbour's bursts.
func (n Neighbour) Every() time.Duration {
	return time.Duration(float64(n.Burst) / n.Rate * float64(time.Second))
}

// RunNeighbour draws the neighbour's bursts on the real clock until ctx ends.
func (s *Server) RunNeighbour(ctx context.Context) {
	t := time.NewTicker(s.cfg.Neighbour.Every())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.NeighbourBurst()
		}
	}
}

// NeighbourBurst is one of the neighbour's bursts: Burst requests against the organization's
// bucket, at the emulator's clock's now.
func (s *Server) NeighbourBurst() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for range s.cfg.Neighbour.Burst {
		s.stats.NeighbourRequests++
		if !s.org.AllowN(now, 1) {
			s.stats.NeighbourRateLimited++
		}
	}
}
