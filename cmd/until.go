package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// pollUntil repeats the GET until the --until expression holds for its 2xx body. Each poll is a
// call through the engine, with its retries, the client budget and its attempt line, and with
// what is left of --max-time; between polls it waits --poll. When the expression holds, the
// last body is written as a single call's would be (exit 0). When --max-time ends first (or the
// next poll would start past it), the last 2xx body is written to stdout, and the call ends as
// exhausted (exit 4).
func pollUntil(ctx context.Context, f *Factory, sess *session, o *RequestOptions, spec *request.Spec, out *callOutcome) error {
	dest, indent, color, err := openDest(f, o)
	if err != nil {
		return err
	}
	defer dest.discard()
	clock := sess.engine.Clock
	if clock == nil {
		clock = retry.SystemClock{}
	}
	hold := &heldSink{next: sess.engine.Sink}
	engine := *sess.engine
	engine.Sink = hold
	maxTime, poll := sess.policy.MaxTime, time.Duration(o.Poll)
	start := clock.Now()
	var last *retry.Response
	policy := sess.policy
	policy.Since = start
	for polls := 1; ; polls++ {
		res, err := engine.Do(ctx, spec, policy)
		out.add(res)
		if err != nil {
			hold.flush()
			if last != nil && retry.OutcomeOf(err) == retry.Exhausted {
				out.hint = fmt.Sprintf("the condition did not hold yet: the body above is the last 2xx answer (poll %d); raise --max-time to wait longer", polls-1)
				return writeLast(ctx, f, o, last, err)
			}
			return err
		}
		last = res.Response
		holds, err := conditionHolds(ctx, o.until, last.Body)
		if err != nil {
			hold.flush()
			return err
		}
		if holds {
			hold.finish("done", fmt.Sprintf("--until %s holds after %d %s", o.until, polls, output.Plural(int64(polls), "poll", "polls")), 0)
			return writeDone(ctx, dest, o, last, indent, color)
		}
		left := maxTime - clock.Now().Sub(start)
		if maxTime > 0 && poll >= left {
			why := fmt.Sprintf("--until %s did not hold after %d %s, and the next in %s would pass the %s left of --max-time",
				o.until, polls, output.Plural(int64(polls), "poll", "polls"), retry.FormatDuration(poll), retry.FormatDuration(max(left, 0)))
			hold.finish("stop", why, 0)
			out.hint = "the body above is the last answer; raise --max-time to wait longer"
			return writeLast(ctx, f, o, last, &retry.ExhaustedError{Failure: retry.Failure{
				Method: spec.Method, Path: spec.Path(), Status: last.Status, RequestID: last.RequestID,
				Reason: why, Attempts: out.attempts}})
		}
		hold.finish("poll", fmt.Sprintf("poll %d: --until %s not true yet", polls, o.until), poll)
		if err := clock.Sleep(ctx, poll); err != nil {
			return err
		}
	}
}

// conditionHolds evaluates --until on a 2xx body. A body that is not JSON, or an expression
// that fails on it, is the user's expression meeting the data: a usage error.
func conditionHolds(ctx context.Context, q *output.Query, body []byte) (bool, error) {
	v, err := output.DecodeJSON(body)
	if err != nil {
		return false, request.Usagef("--until: %v", err)
	}
	ok, err := q.Holds(ctx, v)
	if err != nil {
		return false, request.Usagef("--until: %v", err)
	}
	return ok, nil
}

// writeLast writes the last 2xx body of polls that ended with err, and returns err. With -o the
// file is left as it was (only a call that succeeds writes it), so the body goes to stdout.
func writeLast(ctx context.Context, f *Factory, o *RequestOptions, last *retry.Response, err error) error {
	ios := f.IOStreams
	dest := &callBody{out: ios.Out, include: o.Include}
	// The call's own error says how it ended; a failure to show the body adds nothing to it.
	_ = writeResponse(ctx, dest, last, o, ios.IsStdoutTTY() || ios.ColorEnabled(), ios.ColorEnabled())
	return err
}

// writeDone writes the answer of a call that is done, as callOnce writes one: to stdout or -o
// FILE (committed), through --jq.
func writeDone(ctx context.Context, dest *callBody, o *RequestOptions, r *retry.Response, indent, color bool) error {
	if err := writeResponse(ctx, dest, r, o, indent, color); err != nil {
		return err
	}
	return dest.commit()
}

// heldSink passes attempt events on, but holds back the last one of a poll that came back
// "done": whether the poll ends the command is known only once its body is read.
type heldSink struct {
	next retry.Sink
	held *retry.Event
}

func (h *heldSink) Attempt(ev retry.Event) {
	if ev.Decision == "done" {
		h.held = &ev
		return
	}
	h.pass(ev)
}

func (h *heldSink) pass(ev retry.Event) {
	if h.next != nil {
		h.next.Attempt(ev)
	}
}

// finish passes the held event on with the poll's decision: "done" when the condition holds,
// "poll" with the wait before the next, "stop" when no time is left for another.
func (h *heldSink) finish(decision, why string, wait time.Duration) {
	if h.held == nil {
		return
	}
	ev := *h.held
	h.held = nil
	ev.Decision, ev.Why, ev.Wait = decision, why, wait
	if decision == "poll" {
		ev.WaitSource = "--poll"
	}
	if decision == "stop" {
		ev.Outcome = retry.Exhausted
	}
	h.pass(ev)
}

// flush passes a held event on as it came.
func (h *heldSink) flush() {
	if h.held != nil {
		h.pass(*h.held)
		h.held = nil
	}
}
