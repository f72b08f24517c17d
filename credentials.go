package svc

import (
	"context"
	"errors"
	"maps"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
)

// keepCredentials writes the credentials p reports as its vendor replaces them (an OAuth
// refresh, a rotated refresh token: providers.CredentialWatcher) into the source's sealed
// configuration, so that the source opens with them after a restart or on another replica.
// opened is the configuration p was opened with.
func (s *Scope) keepCredentials(p providers.Provider, sourceID string, opened providers.Config) {
	w, ok := providers.AsCredentialWatcher(p)
	if !ok {
		return
	}
	// The refresh token this instance holds: what the stored configuration has unless someone
	// replaced it since. Calls are serialized (the CredentialWatcher contract).
	held := opened[providers.KeyRefreshToken]
	w.WatchCredentials(func(creds providers.Config) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		kept, err := s.storeCredentials(ctx, sourceID, held, creds)
		switch {
		case err != nil:
			s.c.log.Error("keep a source's renewed credentials", "source_id", sourceID, "err", err)
		case kept:
			if r := creds[providers.KeyRefreshToken]; r != "" { // else the source keeps its own
				held = r
			}
			s.c.log.Info("kept a source's renewed credentials", "source_id", sourceID)
		default:
			s.c.log.Info("a source's renewed credentials were not kept: its configuration was replaced meanwhile", "source_id", sourceID)
		}
	})
}

// storeCredentials merges creds (CredentialKeys only) into the source's sealed configuration,
// unless the refresh token stored there is no longer held (the source was connected again, or
// another replica's instance stored a token it was given since): the newer configuration then
// stays. kept reports whether creds were stored; a source that is gone keeps nothing.
func (s *Scope) storeCredentials(ctx context.Context, sourceID, held string, creds providers.Config) (kept bool, err error) {
	creds = providers.Credentials(creds)
	if len(creds) == 0 {
		return false, nil
	}
	s.c.configMu.Lock()
	defer s.c.configMu.Unlock()
	cfg, err := s.sourceConfig(ctx, sourceID)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if cfg.Config[providers.KeyRefreshToken] != held {
		return false, nil
	}
	next := maps.Clone(cfg.Config)
	if next == nil {
		next = providers.Config{}
	}
	if creds[providers.KeyRefreshToken] == "" {
		delete(creds, providers.KeyRefreshToken) // never drop the refresh token the source has
	}
	maps.Copy(next, creds)
	if err := s.sealSourceConfigLocked(ctx, sourceID, cfg.Provider, cfg.SourceRef, next); err != nil {
		return false, err
	}
	return true, nil
}
