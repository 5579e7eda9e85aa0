package cmd

import (
	"context"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/transport"
)

// progressFrom is the file size from which an upload shows a progress bar on a terminal.
const progressFrom = 4 << 20

// UploadOptions are the flags of `brellium upload`.
type UploadOptions struct {
	*RequestOptions
	URL, File string
}

// NewCmdUpload builds `brellium upload UPLOAD_URL FILE`: the file's bytes PUT to a pre-signed
// upload URL, streamed from disk for each attempt, through the same engine as every call.
func NewCmdUpload(f *Factory, g *GlobalOptions, runF func(*UploadOptions) error) *cobra.Command {
	o := &UploadOptions{RequestOptions: newRequestOptions()}
	o.Method = http.MethodPut
	c := &cobra.Command{
		Use:   "upload UPLOAD_URL FILE",
		Short: "Upload a file to a pre-signed upload URL (repeated like a safe call)",
		Long: `Upload FILE to UPLOAD_URL, the upload_url that POST /v2/documents answers for each document
whose file has not arrived yet: one PUT of the file's bytes, streamed from disk and read anew
for each attempt. A PUT of the same bytes to the same URL may be repeated, so 429, 408, 5xx and
dropped connections are repeated as for any safe call, with --retry, --max-time and --timeout.

The upload URL is signed: no Authorization header or other credential goes with it, whatever
the environment holds, and its signature is not shown in the log. It must be https (plain http
only on a loopback address). Content-Type is -H's, else the one of the file's extension, else
application/octet-stream. The client budget is the API's, so an upload neither waits for it nor
spends it. On a terminal, a file over 4 MiB shows a progress bar (not with -s).

A 403 or 401 from the upload host means the URL has expired or is refused (exit 3): get a new
one by repeating POST /v2/documents with the same external_id, which creates nothing and
answers the same documents with fresh upload URLs.`,
		Example: `  brellium post /v2/documents -d '{"documents":[{"external_id":"visit-42","file_name":"visit-42.pdf"}]}' -q '.data[0].upload_url' > url.txt
  brellium upload "$(cat url.txt)" visit-42.pdf --max-time 10m
  brellium get /v2/documents/DOC_ID --until '.status == "processed"' --max-time 5m`,
		Args: exactArgs(2, "UPLOAD_URL and FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			o.URL, o.File = args[0], args[1]
			if err := prepare(c, f, g, o.RequestOptions.check); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runUpload(c.Context(), f, g, o)
		},
	}
	fl := c.Flags()
	addRetryFlags(fl, o.RequestOptions)
	fl.StringArrayVarP(&o.Headers, "header", "H", nil, "extra header 'Name: value', such as Content-Type (repeatable; no credentials)")
	fl.BoolVarP(&o.Include, "include", "i", false, "print the status line and headers of the answer")
	fl.StringVarP(&o.Output, "output", "o", "", "write the answer's body to FILE instead of stdout")
	fl.BoolVarP(&o.Silent, "silent", "s", false, "drop the lines of successful attempts and the progress bar (errors still print)")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "show request and response headers")
	fl.StringVar(&o.LogFormat, "log-format", o.LogFormat, "stderr format: text or json")
	fl.StringVarP(&o.WriteOut, "write-out", "w", "", "after the body, print FORMAT on stdout: %{http_code}, %header{NAME}, %{json}…")
	_ = c.RegisterFlagCompletionFunc("log-format", fixedCompletion("text", "json"))
	g.addFlags(c, colorFlag)
	return c
}

func runUpload(ctx context.Context, f *Factory, g *GlobalOptions, o *UploadOptions) error {
	logger, err := newLogger(f, g, o.RequestOptions)
	if err != nil {
		return err
	}
	e := &ending{ctx: ctx, f: f, o: o.RequestOptions, logger: logger, start: time.Now()}
	file, err := request.OpenFile(o.File)
	if err != nil {
		return e.finish(err)
	}
	spec, err := request.NewUpload(o.URL, file, o.Headers)
	if err != nil {
		return e.finish(err)
	}
	for _, sig := range request.SignatureValues(spec.URL) {
		f.Secrets().Add(sig)
	}
	var sink retry.Sink = logger
	ios := f.IOStreams
	if file.Size > progressFrom && ios.IsStderrTTY() && !o.Silent && o.LogFormat == "text" {
		bar := output.NewUploadBar(ios, file.Size, filepath.Base(file.Path))
		file.Watch = bar.Watch
		sink = retry.SinkFunc(func(ev retry.Event) {
			bar.Clear()
			logger.Attempt(ev)
		})
	}
	net := transport.Net{Transport: f.transport()}
	e.sess = &session{net: net, logger: logger, close: net.CloseIdleConnections, policy: policyOf(o.RequestOptions),
		engine: &retry.Engine{Sender: net, Clock: f.Clock, Rand: f.Rand, Sink: sink, UserAgent: "brellium/" + Version}}
	defer e.sess.close()
	err = callOnce(ctx, f, e.sess, o.RequestOptions, spec, &e.out)
	return e.finish(err)
}
