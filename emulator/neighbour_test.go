package emulator

import (
	"testing"
	"time"
)

func TestParseNeighbour(t *testing.T) {
	for in, want := range map[string]Neighbour{
		"15":           {Rate: 15, Burst: 5},
		" 15 ,burst=3": {Rate: 15, Burst: 3},
		"2":            {Rate: 2, Burst: 1},
		"0.5,burst=1":  {Rate: 0.5, Burst: 1},
		"100,burst=25": {Rate: 100, Burst: 25},
	} {
		if got, err := ParseNeighbour(in); err != nil || got != want {
			t.Errorf("ParseNeighbour(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "fast", "15,burst=0", "15,burst=x", "15,b=3", "1e9"} {
		if _, err := ParseNeighbour(bad); err == nil {
			t.Errorf("ParseNeighbour(%q): no error", bad)
		}
	}
	if got := (Neighbour{Rate: 15, Burst: 5}).Every(); got != time.Second/3 {
		t.Errorf("Every = %v, want a third of a second", got)
	}
}

// The neighbour draws from the organization's bucket: brellium sees the level fall, and the
// neighbour's requests and refusals are counted apart from brellium's.
func TestNeighbourDrawsFromTheOrganizationsBucket(t *testing.T) {
	f := start(t, Config{Burst: 10, Rate: 1, Neighbour: Neighbour{Rate: 6, Burst: 6}})
	f.em.NeighbourBurst()
	resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 200, body)
	if rl(resp) != "10/3/0" {
		t.Errorf("ratelimit %s after the neighbour took 6 of 10, want 10/3/0", rl(resp))
	}
	f.em.NeighbourBurst()
	s := f.em.Stats()
	if s.NeighbourRequests != 12 || s.NeighbourRateLimited != 3 || s.Requests != 1 || s.RateLimited != 0 {
		t.Errorf("stats %+v: want 12 neighbour requests, 3 refused, 1 of brellium's", s)
	}
}
