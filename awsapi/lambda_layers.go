package awsapi

// Lambda: layers (REST, /2018-10-31/layers). A layer version is a zip
// (Content.ZipFile; no S3) stored in the JetStream object store
// LayerBucket under "<layer>:<version>", its description in KV bucket
// layerMetaBucket under "<layer>.<version>" (and the last number under
// "<layer>": numbers are not reused). A process function's Layers (at
// most 5 version ARNs) are unpacked, in order, into its environments'
// /opt (function/process: PYTHONPATH, NODE_PATH, PATH and
// LD_LIBRARY_PATH as Lambda sets them); an in-process function takes
// none. DeleteLayerVersion of a version that functions (or their
// published versions) use only marks it deleted: it is no longer listed,
// gettable, or usable by a function that does not use it yet, and its
// content stays until no function refers to it ("To avoid breaking
// functions, a copy of the version remains in Lambda until no functions
// refer to it", API_DeleteLayerVersion).
// https://docs.aws.amazon.com/lambda/latest/dg/chapter-layers.html
// https://docs.aws.amazon.com/lambda/latest/api/API_PublishLayerVersion.html

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

const (
	// LayerBucket is the JetStream object store of layer versions' zips.
	LayerBucket     = "runnel_layers"
	layerMetaBucket = "runnel_layer_versions"
	// maxLayers is the most layers a function uses.
	maxLayers = 5
)

type layerContent struct {
	ZipFile                          []byte `json:",omitempty"`
	S3Bucket, S3Key, S3ObjectVersion string `json:",omitempty"`
}

type publishLayerVersionInput struct {
	Description, LicenseInfo                    string
	Content                                     *layerContent
	CompatibleRuntimes, CompatibleArchitectures []string
}

// layerVersion is a layer version as the API answers it
// (API_PublishLayerVersion's output).
type layerVersion struct {
	Content struct {
		Location, CodeSha256 string
		CodeSize             int64
	}
	LayerArn, LayerVersionArn, Description, CreatedDate, LicenseInfo string
	Version                                                          int64
	CompatibleRuntimes, CompatibleArchitectures                      []string `json:",omitempty"`
	// Deleted marks a version deleted while functions still use it
	// (never answered: such a version is not found).
	Deleted bool `json:",omitempty"`
}

// layerArn is the ARN of layer name (with ":<version>" when v > 0).
func (h *Handler) layerArn(name string, v int64) string {
	arn := fmt.Sprintf("arn:aws:lambda:%s:%s:layer:%s", h.rn.Engine.Region(), h.rn.Engine.AccountID(), name)
	if v > 0 {
		arn += ":" + strconv.FormatInt(v, 10)
	}
	return arn
}

func (h *Handler) layerStores(ctx context.Context) (jetstream.ObjectStore, jetstream.KeyValue, error) {
	objs, err := h.rn.Engine.EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: LayerBucket, Storage: jetstream.FileStorage, Replicas: h.rn.Engine.Replicas(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open object store %s: %w", LayerBucket, err)
	}
	kv, err := h.rn.Engine.Bucket(ctx, layerMetaBucket)
	return objs, kv, err
}

// layerName is the layer the path names, by name or ARN.
func (rq *request) layerName() string {
	name := rq.r.PathValue("layer")
	if _, n, ok := strings.Cut(name, ":layer:"); ok {
		return n
	}
	return name
}

func lambdaPublishLayerVersion(rq *request, in *publishLayerVersionInput) (any, error) {
	name := rq.layerName()
	if in.Content == nil || len(in.Content.ZipFile) == 0 {
		return nil, lambdaInvalid("Content.ZipFile: required (S3 content is not supported)")
	}
	h, ctx := rq.h, rq.ctx
	objs, kv, err := h.layerStores(ctx)
	if err != nil {
		return nil, err
	}
	h.fnMu.Lock()
	defer h.fnMu.Unlock()
	var last int64
	if e, err := kv.Get(ctx, name); err == nil {
		last, _ = strconv.ParseInt(string(e.Value()), 10, 64)
	}
	v := last + 1
	lv := layerVersion{LayerArn: h.layerArn(name, 0), LayerVersionArn: h.layerArn(name, v), Version: v,
		Description: in.Description, LicenseInfo: in.LicenseInfo, CreatedDate: h.rn.Engine.Clock.Now().UTC().Format(functionTimeLayout),
		CompatibleRuntimes: in.CompatibleRuntimes, CompatibleArchitectures: in.CompatibleArchitectures}
	lv.Content.CodeSha256, lv.Content.CodeSize = codeDigest(in.Content.ZipFile), int64(len(in.Content.ZipFile))
	if _, err := objs.PutBytes(ctx, fmt.Sprintf("%s:%d", name, v), in.Content.ZipFile); err != nil {
		return nil, awserr.New(awserr.ErrService, "store layer: %v", err)
	}
	b, _ := json.Marshal(lv)
	if _, err := kv.Put(ctx, fmt.Sprintf("%s.%d", name, v), b); err != nil {
		return nil, awserr.New(awserr.ErrService, "store layer: %v", err)
	}
	if _, err := kv.Put(ctx, name, []byte(strconv.FormatInt(v, 10))); err != nil {
		return nil, awserr.New(awserr.ErrService, "store layer: %v", err)
	}
	return lv, nil
}

// layerNotFound is Lambda's answer for a layer version that does not
// exist.
func layerNotFound(arn string) error {
	return awserr.New(awserr.ErrResourceNotFound, "The resource you requested does not exist. (layer version %s)", arn)
}

// getLayer reads layer version v of name; a deleted one is not found.
func (h *Handler) getLayer(ctx context.Context, name string, v int64) (*layerVersion, error) {
	lv, err := h.readLayer(ctx, name, v)
	if err == nil && lv.Deleted {
		return nil, layerNotFound(h.layerArn(name, v))
	}
	return lv, err
}

// readLayer reads layer version v of name, deleted or not.
func (h *Handler) readLayer(ctx context.Context, name string, v int64) (*layerVersion, error) {
	_, kv, err := h.layerStores(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, fmt.Sprintf("%s.%d", name, v))
	if err != nil {
		return nil, layerNotFound(h.layerArn(name, v))
	}
	var lv layerVersion
	return &lv, json.Unmarshal(e.Value(), &lv)
}

// parseLayerArn splits a layer version ARN
// (arn:aws:lambda:<region>:<account>:layer:<name>:<version>).
func parseLayerArn(arn string) (name string, v int64, ok bool) {
	parts := strings.Split(arn, ":")
	if len(parts) != 8 || parts[5] != "layer" {
		return "", 0, false
	}
	v, err := strconv.ParseInt(parts[7], 10, 64)
	return parts[6], v, err == nil && v > 0
}

// checkNewLayers refuses, as Lambda does, a layer version of arns that is
// deleted (or never existed) unless it is in kept (the layers the
// function used already: a deleted version stays usable by the functions
// that use it).
func (h *Handler) checkNewLayers(ctx context.Context, arns, kept []string) error {
	for _, arn := range arns {
		if slices.Contains(kept, arn) {
			continue
		}
		name, v, ok := parseLayerArn(arn)
		if !ok {
			continue // layerZips words it
		}
		if _, err := h.getLayer(ctx, name, v); err != nil {
			return lambdaInvalid("Layer version %s does not exist.", arn)
		}
	}
	return nil
}

// layerUsers reports the layer version ARNs any stored function or
// published version uses.
func (h *Handler) layerUsers(ctx context.Context) (map[string]bool, error) {
	kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	err = engine.LoadJSON(ctx, kv, func(_ string, m functionMeta, err error) {
		for _, arn := range m.Layers {
			used[arn] = true
		}
	})
	return used, err
}

// collectLayers removes the content of the deleted layer versions of arns
// that no function uses any more (a function or version that used them
// was deleted, or changed its Layers).
func (h *Handler) collectLayers(ctx context.Context, arns []string) {
	if len(arns) == 0 {
		return
	}
	used, err := h.layerUsers(ctx)
	if err != nil {
		h.lopts.Logger.Warn("lambda api: layers in use", "err", err)
		return
	}
	for _, arn := range arns {
		name, v, ok := parseLayerArn(arn)
		if !ok || used[arn] {
			continue
		}
		if lv, err := h.readLayer(ctx, name, v); err == nil && lv.Deleted {
			h.purgeLayer(ctx, name, v)
		}
	}
}

// purgeLayer removes layer version v of name and its content.
func (h *Handler) purgeLayer(ctx context.Context, name string, v int64) error {
	objs, kv, err := h.layerStores(ctx)
	if err != nil {
		return err
	}
	kv.Purge(ctx, fmt.Sprintf("%s.%d", name, v))
	if err := objs.Delete(ctx, fmt.Sprintf("%s:%d", name, v)); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return awserr.New(awserr.ErrService, "delete layer: %v", err)
	}
	return nil
}

// pathLayer is the layer and version the path names.
func (rq *request) pathLayer() (string, int64, error) {
	v, err := strconv.ParseInt(rq.r.PathValue("version"), 10, 64)
	if err != nil || v < 1 {
		return "", 0, lambdaInvalid("VersionNumber: %q must be a layer version number (1 or more)", rq.r.PathValue("version"))
	}
	return rq.layerName(), v, nil
}

func lambdaGetLayerVersion(rq *request, _ *noInput) (any, error) {
	name, v, err := rq.pathLayer()
	if err != nil {
		return nil, err
	}
	return rq.h.getLayer(rq.ctx, name, v)
}

func lambdaDeleteLayerVersion(rq *request, _ *noInput) (any, error) {
	name, v, err := rq.pathLayer()
	if err != nil {
		return nil, err
	}
	h, ctx := rq.h, rq.ctx
	h.fnMu.Lock() // no function takes it up meanwhile
	defer h.fnMu.Unlock()
	lv, err := h.readLayer(ctx, name, v)
	if err != nil || lv.Deleted {
		return nil, nil // deleting a version that does not exist is no error, as in Lambda
	}
	used, err := h.layerUsers(ctx)
	if err != nil {
		return nil, err
	}
	if !used[lv.LayerVersionArn] {
		return nil, h.purgeLayer(ctx, name, v)
	}
	// Functions use it: marked deleted, its content kept for them.
	_, kv, err := h.layerStores(ctx)
	if err != nil {
		return nil, err
	}
	lv.Deleted = true
	b, _ := json.Marshal(lv)
	if _, err := kv.Put(ctx, fmt.Sprintf("%s.%d", name, v), b); err != nil {
		return nil, awserr.New(awserr.ErrService, "delete layer: %v", err)
	}
	return nil, nil
}

// layerVersions reads every layer version (of layer name, "" for all),
// by layer and then newest first.
func (h *Handler) layerVersions(ctx context.Context, name string) ([]layerVersion, error) {
	_, kv, err := h.layerStores(ctx)
	if err != nil {
		return nil, err
	}
	var out []layerVersion
	err = engine.LoadJSON(ctx, kv, func(key string, lv layerVersion, err error) {
		if l, _, ok := strings.Cut(key, "."); ok && err == nil && !lv.Deleted && (name == "" || l == name) {
			out = append(out, lv)
		}
	})
	slices.SortFunc(out, func(a, b layerVersion) int {
		if c := strings.Compare(a.LayerArn, b.LayerArn); c != 0 {
			return c
		}
		return int(b.Version - a.Version)
	})
	return out, err
}

func lambdaListLayerVersions(rq *request, _ *noInput) (any, error) {
	vs, err := rq.h.layerVersions(rq.ctx, rq.layerName())
	if err != nil {
		return nil, err
	}
	return pageOf(rq, vs, 50, "LayerVersions", func(lv *layerVersion) layerVersion { return *lv })
}

type layerListItem struct {
	LayerName, LayerArn   string
	LatestMatchingVersion layerVersion
}

func lambdaListLayers(rq *request, _ *noInput) (any, error) {
	vs, err := rq.h.layerVersions(rq.ctx, "")
	if err != nil {
		return nil, err
	}
	var items []layerListItem
	for _, lv := range vs {
		if len(items) == 0 || items[len(items)-1].LayerArn != lv.LayerArn {
			items = append(items, layerListItem{LayerName: lv.LayerArn[strings.LastIndex(lv.LayerArn, ":")+1:], LayerArn: lv.LayerArn, LatestMatchingVersion: lv})
		}
	}
	return pageOf(rq, items, 50, "Layers", func(it *layerListItem) layerListItem { return *it })
}

// layerZips checks a function's Layers (version ARNs, at most 5) and
// reads their zips, in order.
func (h *Handler) layerZips(ctx context.Context, arns []string) ([][]byte, error) {
	if len(arns) > maxLayers {
		return nil, lambdaInvalid("Layers: at most %d layers, got %d", maxLayers, len(arns))
	}
	objs, _, err := h.layerStores(ctx)
	if err != nil {
		return nil, err
	}
	var zips [][]byte
	for _, arn := range arns {
		parts := strings.Split(arn, ":")
		if len(parts) != 8 || parts[5] != "layer" {
			return nil, lambdaInvalid("Layers: %q is not a layer version ARN (arn:aws:lambda:<region>:<account>:layer:<name>:<version>)", arn)
		}
		z, err := objs.GetBytes(ctx, parts[6]+":"+parts[7])
		if err != nil {
			return nil, lambdaInvalid("Layer version %s does not exist.", arn)
		}
		zips = append(zips, z)
	}
	return zips, nil
}
