package sim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestEngineWallClockPacing: steps arrive at absolute due times: the first token after the
// 10.24 ms prefill, then one every 8 ms, with no drift over 100 steps.
func TestEngineWallClockPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := newEngine(mustProfile(t, "textbook"), false)
		go e.Start(ctx)
		t0 := time.Now()
		ch, err := e.Submit(ctx, SeqRequest{ID: "a", PromptTokens: 512, MaxTokens: 100, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		tokens, k := 0, 0
		var last Step
		for st := range ch {
			want := t0.Add(10240*time.Microsecond + time.Duration(k)*8*time.Millisecond)
			if !st.At.Equal(want) || !time.Now().Equal(want) {
				t.Fatalf("step %d at %v (received %v), want %v", k, st.At.Sub(t0), time.Since(t0), want.Sub(t0))
			}
			tokens += st.Tokens
			last = st
			k++
		}
		if tokens != 100 || !last.Done || last.FinishReason != "length" {
			t.Errorf("%d tokens, last step %+v", tokens, last)
		}
		if st := e.Stats(); st.Running != 0 || st.Waiting != 0 || st.KVUsage != 0 || st.GenerationTokens != 100 || st.PromptTokens != 512 {
			t.Errorf("stats after the run: %+v", st)
		}
	})
}

// TestEngineBatchesConcurrentRequests: requests submitted together decode together, at
// the batched step time.
func TestEngineBatchesConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := newEngine(mustProfile(t, "textbook"), false)
		go e.Start(ctx)
		t0 := time.Now()
		var chs []<-chan Step
		for range 4 {
			ch, err := e.Submit(ctx, SeqRequest{PromptTokens: 512, MaxTokens: 10, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			chs = append(chs, ch)
		}
		for i, ch := range chs {
			var at []time.Time
			for st := range ch {
				at = append(at, st.At)
			}
			// 10.24 ms prefill, then 9 steps of 8 × 1.36 = 10.88 ms.
			if got, want := at[len(at)-1].Sub(t0), 10240*time.Microsecond+9*10880*time.Microsecond; got != want {
				t.Errorf("request %d: last token at %v, want %v", i, got, want)
			}
		}
	})
}

// TestEngineSlowConsumer: a reader that takes nothing until the end still gets every
// token and the Done step; the engine never waits for it.
func TestEngineSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := newEngine(mustProfile(t, "textbook"), false)
		go e.Start(ctx)
		t0 := time.Now()
		slow, _ := e.Submit(ctx, SeqRequest{PromptTokens: 100, MaxTokens: 200, IgnoreEOS: true})
		fast, _ := e.Submit(ctx, SeqRequest{PromptTokens: 100, MaxTokens: 200, IgnoreEOS: true})
		var fastEnd time.Time
		for st := range fast {
			fastEnd = st.At
		}
		if want := t0.Add(2*time.Millisecond + 199*8960*time.Microsecond); !fastEnd.Equal(want) {
			t.Errorf("fast reader's last token at %v, want %v", fastEnd.Sub(t0), want.Sub(t0))
		}
		time.Sleep(time.Second)
		tokens, steps, done := 0, 0, false
		for st := range slow {
			tokens += st.Tokens
			steps++
			done = st.Done
		}
		if tokens != 200 || !done || steps >= 200 {
			t.Errorf("slow reader: %d tokens in %d steps, done %v (want 200 tokens, merged steps, done)", tokens, steps, done)
		}
	})
}

// TestEngineCancelFreesKV: cancelling a request's context aborts it, closes its channel
// without a Done step and frees its KV blocks.
func TestEngineCancelFreesKV(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := newEngine(mustProfile(t, "h200-llama-3.1-8b"), false)
		go e.Start(ctx)
		rctx, rcancel := context.WithCancel(ctx)
		ch, err := e.Submit(rctx, SeqRequest{PromptTokens: 4000, MaxTokens: 1000, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		<-ch // first token
		if st := e.Stats(); st.Running != 1 || st.KVUsage == 0 {
			t.Fatalf("running: %+v", st)
		}
		rcancel()
		sawDone := false
		for st := range ch {
			sawDone = sawDone || st.Done
		}
		synctest.Wait()
		if st := e.Stats(); sawDone || st.Running != 0 || st.KVUsage != 0 {
			t.Errorf("after cancel: done %v, stats %+v", sawDone, st)
		}
		// The engine still serves.
		ch, err = e.Submit(ctx, SeqRequest{PromptTokens: 10, MaxTokens: 3, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for st := range ch {
			n += st.Tokens
		}
		if n != 3 {
			t.Errorf("%d tokens after a cancellation, want 3", n)
		}
	})
}

// TestEngineStop: ending Start's context closes unfinished channels and refuses new work.
func TestEngineStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		e := newEngine(mustProfile(t, "textbook"), false)
		stopped := make(chan struct{})
		go func() { e.Start(ctx); close(stopped) }()
		ch, _ := e.Submit(t.Context(), SeqRequest{PromptTokens: 10, MaxTokens: 1000, IgnoreEOS: true})
		<-ch
		cancel()
		<-stopped
		for st := range ch {
			if st.Done {
				t.Error("Done after stop")
			}
		}
		if _, err := e.Submit(t.Context(), SeqRequest{PromptTokens: 10, MaxTokens: 3}); !errors.Is(err, ErrStopped) {
			t.Errorf("Submit after stop: %v", err)
		}
	})
}

func TestEngineRejects(t *testing.T) {
	e := NewEngine(mustProfile(t, "textbook"))
	if _, err := e.Submit(t.Context(), SeqRequest{PromptTokens: 10_000_000, MaxTokens: 10}); err == nil {
		t.Error("a prompt larger than the KV cache was accepted")
	}
	bad := NewEngine(Profile{})
	if _, err := bad.Submit(t.Context(), SeqRequest{PromptTokens: 1, MaxTokens: 1}); err == nil {
		t.Error("an engine with an invalid profile accepted work")
	}
}

// BenchmarkEngineTokens measures the wall-clock engine's own cost per token event: 64
// sequences of 1,000 tokens with 1 µs steps, so the engine (not the cost model) is the
// bottleneck and runs behind its due times, catching up as fast as it can. Reports Step
// events received per second (the channel path the HTTP server reads) and tokens per second.
func BenchmarkEngineTokens(b *testing.B) {
	p := mustProfile(b, "textbook")
	p.Cost.DecodeStepMs, p.Cost.PrefillMsPerToken, p.Cost.DecodeGrowth = 0.001, 0, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := NewEngine(p)
	go e.Start(ctx)
	tokens, events := 0, 0
	for b.Loop() {
		var chs []<-chan Step
		for range 64 {
			ch, err := e.Submit(ctx, SeqRequest{PromptTokens: 16, MaxTokens: 1000, IgnoreEOS: true})
			if err != nil {
				b.Fatal(err)
			}
			chs = append(chs, ch)
		}
		done := make(chan [2]int)
		for _, ch := range chs {
			go func() {
				n, k := 0, 0
				for st := range ch {
					n += st.Tokens
					k++
				}
				done <- [2]int{n, k}
			}()
		}
		for range chs {
			r := <-done
			tokens += r[0]
			events += r[1]
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// A cancellation that arrives after the sequence's last step was due (but before the
// engine's loop caught up) finds it finished by its own catch-up: the sequence ends with
// its Done step, once, and the channel is not closed twice.
func TestEngineCancelAfterLastStepDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(mustProfile(t, "textbook"), false)
		// No Start: nothing advances the engine but Submit and the cancellation.
		rctx, rcancel := context.WithCancel(t.Context())
		ch, err := e.Submit(rctx, SeqRequest{PromptTokens: 10, MaxTokens: 3, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // all three tokens were due long ago
		rcancel()
		synctest.Wait()
		n, done := 0, 0
		for st := range ch {
			n += st.Tokens
			if st.Done {
				done++
			}
		}
		if n != 3 || done != 1 {
			t.Errorf("%d tokens, %d Done steps; want 3 and 1", n, done)
		}
	})
}
