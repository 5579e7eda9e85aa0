package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/request"
)

// EmulatorOptions are the flags of `brellium emulator`.
type EmulatorOptions struct {
	Addr string
	emulator.Config
	Latency       durationValue
	TokenInterval durationValue
	ListLag       durationValue
	ProcessDelay  durationValue
	UploadTTL     durationValue
	Neighbour     string
}

// NewCmdEmulator builds `brellium emulator`: a local double of the API.
func NewCmdEmulator(f *Factory, runF func(*EmulatorOptions) error) *cobra.Command {
	d := emulator.DefaultConfig()
	o := &EmulatorOptions{Addr: "127.0.0.1:8080", Config: d,
		TokenInterval: durationValue(d.TokenInterval), ListLag: durationValue(d.ListLag),
		ProcessDelay: durationValue(d.ProcessDelay), UploadTTL: durationValue(d.UploadTTL)}
	c := &cobra.Command{
		Use:   "emulator",
		Short: "Serve a local double of the Brellium API, with injected faults",
		Long: `Serve a local double of the Brellium API that keeps its documented behaviour: one token
bucket for the organization (every key shares it), ratelimit headers, 429 with Retry-After,
bare 403/413/414/431 refusals, the endpoints whose repeats matter, and the token endpoint
with its own limit. Any non-empty bearer token is accepted.

The first line on stdout is "listening on http://HOST:PORT". GET /_emulator/stats returns
counters (requests, responses by status, 429s, writes per endpoint, uploads); POST
/_emulator/faults scripts the next answers, e.g.
{"method":"GET","path":"/v2/audits/ID","status":503,"times":2}.

The second line is "uploads on http://HOST:PORT": the storage host that the upload_url of
POST /v2/documents points at, on another port. It takes a PUT of the file to an unexpired
URL (--upload-ttl) and answers an expired or forged one with a 403 and an XML body, as
storage hosts do; it counts requests that carry an Authorization header. A document goes
awaiting_upload, then processing once its file arrives, then processed --process-delay
later; GET /v2/documents/ID shows it. Faults scripted for PUT /upload/DOCUMENT_ID hit it.

--neighbour RATE[,burst=B] simulates another integration of the organization: B requests
every B/RATE seconds against the same bucket (RATE a second on average, in bursts). Its
requests and its 429s are counted apart (neighbour_requests, neighbour_rate_limited).

SIGINT or SIGTERM stops it gracefully (exit 0).`,
		Example: `  brellium emulator --addr 127.0.0.1:8080
  brellium emulator --fail-rate 0.1 --drop-rate 0.02 --seed 7
  brellium emulator --rate 50 --burst 10   # a faster organization for tests
  brellium emulator --rate 50 --neighbour 15,burst=5   # another integration draws 15/s in bursts of 5`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			o.Latency.apply(&o.Config.Latency)
			o.TokenInterval.apply(&o.Config.TokenInterval)
			o.ListLag.apply(&o.Config.ListLag)
			o.ProcessDelay.apply(&o.Config.ProcessDelay)
			o.UploadTTL.apply(&o.Config.UploadTTL)
			if o.Neighbour != "" {
				n, err := emulator.ParseNeighbour(o.Neighbour)
				if err != nil {
					return request.Usagef("%v", err)
				}
				o.Config.Neighbour = n
			}
			if err := o.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runEmulator(c.Context(), f, o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Addr, "addr", o.Addr, "listen address (HOST:PORT; port 0 picks a free one)")
	fl.IntVar(&o.Burst, "burst", o.Burst, "organization bucket: burst")
	fl.Float64Var(&o.Rate, "rate", o.Rate, "organization bucket: requests per second (fractions allowed)")
	fl.IntVar(&o.TokenBurst, "token-burst", o.TokenBurst, "token endpoint: burst per client_id")
	fl.Var(&o.TokenInterval, "token-interval", "token endpoint: one more token request per this interval")
	fl.Float64Var(&o.FailRate, "fail-rate", 0, "share of requests answered 500/502/503/504 after running them (0 to 1)")
	fl.Float64Var(&o.DropRate, "drop-rate", 0, "share of connections closed without an answer after running the request (0 to 1)")
	fl.Var(&o.Latency, "latency", "delay before every answer")
	fl.Uint64Var(&o.Seed, "seed", 0, "seed for request ids and random faults (0: random)")
	fl.IntVar(&o.IPLimit, "ip-limit", 0, "requests per second from one address before a bare 403 (0: no limit)")
	fl.StringVar(&o.ClientSecret, "client-secret", "", "the only client secret the token endpoint accepts (default: any non-empty)")
	fl.Var(&o.ListLag, "list-lag", "how long a new email recipient takes to show in its list")
	fl.IntVar(&o.Audits, "audits", o.Audits, "audits to hold besides the sample one")
	fl.Var(&o.ProcessDelay, "process-delay", "how long a document stays processing after its file arrives")
	fl.Var(&o.UploadTTL, "upload-ttl", "how long an upload URL stays valid")
	fl.StringVar(&o.Neighbour, "neighbour", "", "another integration drawing from the organization's bucket: RATE[,burst=B] (B requests every B/RATE s; B defaults to RATE/3)")
	return c
}

func (d durationValue) apply(to *time.Duration) { *to = time.Duration(d) }

func (o *EmulatorOptions) check() error {
	switch {
	case o.Burst < 1 || o.TokenBurst < 1:
		return request.Usagef("--burst and --token-burst must be at least 1")
	case !(o.Rate > 0):
		return request.Usagef("--rate must be above 0")
	case o.FailRate < 0 || o.FailRate > 1 || o.DropRate < 0 || o.DropRate > 1:
		return request.Usagef("--fail-rate and --drop-rate are shares from 0 to 1")
	case o.TokenInterval <= 0:
		return request.Usagef("--token-interval must be above 0")
	case o.Audits < 0:
		return request.Usagef("--audits must be 0 or more")
	case o.ProcessDelay < 0:
		return request.Usagef("--process-delay must be 0 or more")
	case o.UploadTTL <= 0:
		return request.Usagef("--upload-ttl must be above 0")
	}
	return nil
}

func runEmulator(ctx context.Context, f *Factory, o *EmulatorOptions) error {
	// A double serving benchmarks trades memory (its live heap is a few MiB) for CPU: at tens of
	// thousands of requests a second, a tenth of its time went to the collector.
	defer paceGC(400)()
	em, err := emulator.Start(o.Addr, o.Config)
	if err != nil {
		return &request.UsageError{Msg: fmt.Sprintf("emulator: %v", err), NotArgs: true}
	}
	fmt.Fprintf(f.IOStreams.Out, "listening on %s\nuploads on %s\n", em.URL, em.UploadsURL)
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := em.Close(shutdown); err != nil {
		return &reportedError{err: fmt.Errorf("emulator shutdown: %w", err)}
	}
	fmt.Fprintln(f.IOStreams.ErrOut, "emulator stopped")
	return nil
}
