package awsapi

// Lambda: versions (REST, /2015-03-31/functions/{name}/versions) over
// package function (versions.go). PublishVersion freezes $LATEST: its
// configuration in package function, what the API reports beyond it
// (functionMeta) under the key "<name>.<version>" of functionMetaBucket,
// and for a process function its zip under "<name>:<version>" in
// FunctionCodeBucket with a pool of its own, registered as handler
// "process:<name>:<version>" (built on the other nodes, and after a
// restart, from the stored zip: onStored). Publishing with nothing changed since the last
// version returns that version, as Lambda does.
// https://docs.aws.amazon.com/lambda/latest/api/API_PublishVersion.html

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
)

// metaKey is the key of cfg's functionMeta: the function's name for
// $LATEST, "<name>.<version>" for a published version.
func metaKey(cfg function.Config) string {
	if cfg.Version == "" {
		return cfg.FunctionName
	}
	return cfg.FunctionName + "." + cfg.Version
}

// fingerprint identifies what a version freezes of cfg and meta: two
// equal fingerprints publish no new version.
func fingerprint(cfg function.Config, meta *functionMeta) string {
	cfg.FunctionArn, cfg.RevisionId, cfg.LastVersion, cfg.Version = "", "", 0, ""
	// Reserved concurrency is the function's, not a version's
	// (PutFunctionConcurrency): changing it alone publishes nothing new.
	cfg.ReservedConcurrentExecutions = nil
	b, _ := json.Marshal(struct {
		C                                        function.Config
		Runtime, Handler, Role, Desc, CodeSha256 string
		Layers                                   []string
	}{cfg, meta.Runtime, meta.Handler, meta.Role, meta.Description, meta.CodeSha256, meta.Layers})
	return codeDigest(b)
}

type publishVersionInput struct {
	CodeSha256, Description, RevisionId string
}

func lambdaPublishVersion(rq *request, in *publishVersionInput) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	rq.h.fnMu.Lock()
	defer rq.h.fnMu.Unlock()
	return rq.h.publishLocked(rq.ctx, name, in)
}

// publishLocked is PublishVersion of function name, for a caller holding
// fnMu: a new version, or the latest one when $LATEST has not changed
// since it was published. CreateFunction and UpdateFunctionCode call it
// for Publish: true.
func (h *Handler) publishLocked(ctx context.Context, name string, in *publishVersionInput) (any, error) {
	f, err := h.rn.Functions.GetFunction(name)
	if err != nil {
		return nil, err
	}
	cfg := f.Config()
	meta := h.metaOf(ctx, cfg)
	if in.CodeSha256 != "" && in.CodeSha256 != meta.CodeSha256 {
		return nil, lambdaInvalid("CodeSHA256 (%s) is different from current CodeSHA256 in $LATEST (%s). Please try again with the CodeSHA256 in $LATEST.", in.CodeSha256, meta.CodeSha256)
	}
	if err := h.rn.Functions.CheckRevision(name, in.RevisionId); err != nil {
		return nil, err
	}
	fp := fingerprint(cfg, meta)
	if last, ok := h.rn.Functions.LatestVersion(name); ok {
		if lm, err := h.loadMeta(ctx, metaKey(last)); err == nil && lm.Fingerprint == fp {
			return h.configuration(ctx, last), nil
		}
	}
	vmeta := *meta
	vmeta.Fingerprint = fp
	if in.Description != "" {
		vmeta.Description = in.Description
	}
	// The version's pool, code and metadata are ready before its
	// configuration is stored: another node builds its pool from them.
	var vkey string
	vf, err := h.rn.Functions.PublishVersion(ctx, name, func(v string, vcfg *function.Config) error {
		vkey = name + ":" + v
		if meta.isProcess() {
			if err := h.startVersion(ctx, vcfg, meta); err != nil {
				return err
			}
		}
		return h.storeMeta(ctx, metaKey(*vcfg), &vmeta)
	})
	if err != nil {
		if vkey != "" {
			h.procs.remove(vkey, h.rn.Engine.Clock)
			if meta.isProcess() {
				h.forgetCode(ctx, vkey)
			}
			if kv, kerr := h.rn.Engine.Bucket(ctx, functionMetaBucket); kerr == nil {
				kv.Purge(ctx, strings.Replace(vkey, ":", ".", 1))
			}
		}
		return nil, err
	}
	return h.configuration(ctx, vf.Config()), nil
}

// startVersion starts the pool of published version vcfg of a process
// function (its Version and FunctionArn set), copying $LATEST's stored
// zip to the version's key, and sets its Handler to the pool's (at
// PublishVersion; another node builds its own pool from the stored zip,
// onStored).
func (h *Handler) startVersion(ctx context.Context, vcfg *function.Config, meta *functionMeta) error {
	key := vcfg.FunctionName + ":" + vcfg.Version
	store, err := h.codeStore(ctx)
	if err != nil {
		return err
	}
	code, err := store.GetBytes(ctx, vcfg.FunctionName)
	if err != nil {
		return err
	}
	if _, err := store.PutBytes(ctx, key, code); err != nil {
		return err
	}
	pf, err := h.startProcess(ctx, *vcfg, meta, code)
	if err != nil {
		return err
	}
	vcfg.Handler = ProcessHandlerPrefix + key
	pool := newPool(pf, poolSpec(*vcfg, meta))
	h.rn.Functions.Registry().Register(vcfg.Handler, pool)
	h.procs.install(key, pool, h.rn.Engine.Clock)
	return nil
}

func lambdaListVersionsByFunction(rq *request, _ *noInput) (any, error) {
	return listOf(rq, rq.h.rn.Functions.ListVersions, "Versions", func(c *function.Config) functionConfiguration {
		return rq.h.configuration(rq.ctx, *c)
	})
}

// deleteVersion is DeleteFunction with a Qualifier: a published version
// (its pool, code and metadata go with it); $LATEST and aliases are
// refused as Lambda refuses them. h.fnMu is held.
func (h *Handler) deleteVersion(ctx context.Context, name, qualifier string) error {
	if qualifier != function.Latest && !isVersionNumber(qualifier) {
		if _, err := h.rn.Functions.GetAlias(name, qualifier); err != nil {
			return err
		}
		return lambdaInvalid("Qualifier: %s is an alias; DeleteFunction deletes a version (use DeleteAlias)", qualifier)
	}
	var usedLayers []string
	if m, err := h.loadMeta(ctx, name+"."+qualifier); err == nil {
		usedLayers = m.Layers
	}
	if err := h.rn.Functions.DeleteVersion(ctx, name, qualifier); err != nil {
		return err
	}
	defer h.collectLayers(ctx, usedLayers)
	key := name + ":" + qualifier
	h.rn.Async.DeleteFunctionEventInvokeConfig(ctx, key) // none is no error
	h.procs.remove(key, h.rn.Engine.Clock)
	h.forgetCode(ctx, key)
	if kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket); err == nil {
		kv.Purge(ctx, name+"."+qualifier)
	}
	return nil
}

func isVersionNumber(q string) bool {
	return q != "" && strings.Trim(q, "0123456789") == ""
}

// forgetCode deletes the stored zip under key, if any.
func (h *Handler) forgetCode(ctx context.Context, key string) {
	store, err := h.codeStore(ctx)
	if err != nil {
		return
	}
	if err := store.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		h.lopts.Logger.Warn("lambda api: delete function code", "key", key, "err", err)
	}
}

// layersOf is the layer version ARNs function name and its published
// versions use.
func (h *Handler) layersOf(ctx context.Context, name string) []string {
	kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket)
	if err != nil {
		return nil
	}
	var arns []string
	engine.LoadJSON(ctx, kv, func(key string, m functionMeta, err error) {
		if key == name || strings.HasPrefix(key, name+".") {
			arns = append(arns, m.Layers...)
		}
	})
	return arns
}

// forgetVersionsMeta deletes the metadata of function name and of its
// versions.
func (h *Handler) forgetVersionsMeta(ctx context.Context, name string) {
	kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket)
	if err != nil {
		return
	}
	kv.Purge(ctx, name)
	keys, _ := kv.Keys(ctx)
	for _, k := range keys {
		if strings.HasPrefix(k, name+".") {
			kv.Purge(ctx, k)
		}
	}
}

// removeFunction retires and forgets the pools of function name and its
// versions and returns the versions' keys ("<name>:<version>").
func (p *processFunctions) removeFunction(name string, clock clockwork.Clock) []string {
	p.mu.Lock()
	var keys []string
	for k := range p.m {
		if strings.HasPrefix(k, name+":") {
			keys = append(keys, k)
		}
	}
	p.mu.Unlock()
	p.remove(name, clock)
	for _, k := range keys {
		p.remove(k, clock)
	}
	return keys
}
