package rlock

import (
	"context"
	"sync"
	"time"
)

// watchers holds the contexts handed out by Lock.Held, per lock name and hash field, and
// cancels them when the hold ends.
type watchers struct {
	mu sync.Mutex
	m  map[string]map[string][]*watch // name → field → watches
}

type watch struct {
	cancel context.CancelCauseFunc
	timer  *time.Timer // lease expiry, for holds without the watchdog
}

func newWatchers() *watchers { return &watchers{m: make(map[string]map[string][]*watch)} }

func (ws *watchers) add(name, field string, w *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m[name] == nil {
		ws.m[name] = make(map[string][]*watch)
	}
	ws.m[name][field] = append(ws.m[name][field], w)
}

// remove forgets w without cancelling it.
func (ws *watchers) remove(name, field string, w *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	list := ws.m[name][field]
	for i, x := range list {
		if x == w {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ws.m[name], field)
		if len(ws.m[name]) == 0 {
			delete(ws.m, name)
		}
		return
	}
	ws.m[name][field] = list
}

// end cancels, with cause, the watches of field on name; an empty field means every field.
func (ws *watchers) end(name, field string, cause error) {
	ws.mu.Lock()
	var ended []*watch
	if field == "" {
		for _, list := range ws.m[name] {
			ended = append(ended, list...)
		}
		delete(ws.m, name)
	} else if byField := ws.m[name]; byField != nil {
		ended = byField[field]
		delete(byField, field)
		if len(byField) == 0 {
			delete(ws.m, name)
		}
	}
	ws.mu.Unlock()
	stop(ended, cause)
}

// endAll cancels every watch with cause.
func (ws *watchers) endAll(cause error) {
	ws.mu.Lock()
	var ended []*watch
	for _, byField := range ws.m {
		for _, list := range byField {
			ended = append(ended, list...)
		}
	}
	ws.m = make(map[string]map[string][]*watch)
	ws.mu.Unlock()
	stop(ended, cause)
}

func stop(ws []*watch, cause error) {
	for _, w := range ws {
		if w.timer != nil {
			w.timer.Stop()
		}
		w.cancel(cause)
	}
}
