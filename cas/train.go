package cas

import (
	"errors"
	"fmt"

	"github.com/rookhq/rook/dict"
)

// TrainOptions steer dictionary training.
type TrainOptions struct {
	Kinds       []Kind // nil: every kind
	OnlyMissing bool   // skip kinds that already have a dictionary
	Samples     int    // objects a dictionary is trained from (default 512)
	Size        int    // dictionary size (default 16 KiB)
	MinObjects  int    // fewer objects of a kind: no dictionary (default 32)
	DryRun      bool   // train and measure, keep nothing
	// Progress, if not nil, hears how many of the kinds are done, after
	// each: training one reads its samples and builds and measures a
	// dictionary, seconds for a big kind.
	Progress func(done, total int64)
}

// TrainResult says what training did for one kind.
type TrainResult struct {
	Kind      Kind   `json:"-"`
	KindName  string `json:"kind"`
	Objects   int    `json:"objects"`
	Samples   int    `json:"samples"`
	DictID    uint32 `json:"dict_id,omitempty"`
	DictBytes int    `json:"dict_bytes"`
	// Gain is the estimated number of bytes the dictionary saves on this
	// kind's objects as they are now (positive: smaller with it), against
	// the kind's current dictionary (Against) if it has one.
	Gain int64 `json:"gain"`
	// Against is the kind's newest dictionary, the one its new records
	// use, which a new one is measured against and which the kind keeps
	// when none is (0: none that can be loaded; a new one is measured
	// against plain zstd). Set whatever stops training (too few objects,
	// a training that failed), so that a kind with a dictionary is never
	// reported as having none.
	Against uint32 `json:"against_dict,omitempty"`
	Kept    bool   `json:"kept"`
	// WouldKeep: a dry run found the dictionary worth keeping.
	WouldKeep bool   `json:"would_keep,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Unreadable: the sampled objects that could not be read, when too
	// few others read to train on (Reason says why): the cause to fix is
	// then the store's damage, not the kind's size.
	Unreadable int `json:"unreadable,omitempty"`
}

// ErrNoDictDir: the store was opened with a dictionary set it cannot add to.
var ErrNoDictDir = errors.New("this store's dictionaries are not its own directory")

// Train trains a zstd dictionary per kind from a sample of its objects and
// keeps it only where it pays for itself: the bytes it is estimated to save
// on the kind's objects (measured on objects held out of training, packed as
// the store packs them) over the kind's current dictionary, or over none,
// must exceed its own size. Dictionaries are never deleted (an old record
// may need one), so one no better than the current would only add a file
// on every run. New records of the kind then use it; existing records keep
// theirs until `store repack`.
func (s *Store) Train(opts TrainOptions) ([]TrainResult, error) {
	if opts.Samples <= 0 {
		opts.Samples = 512
	}
	if opts.Size <= 0 {
		opts.Size = 16 << 10
	}
	if opts.MinObjects <= 0 {
		opts.MinObjects = 32
	}
	if s.dicts == nil {
		return nil, ErrNoDictDir
	}
	if !opts.DryRun {
		if err := s.Sync(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		err := s.writable()
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	kinds := opts.Kinds
	if kinds == nil {
		kinds = Kinds
	}
	var out []TrainResult
	for i, k := range kinds {
		if opts.Progress != nil {
			opts.Progress(int64(i), int64(len(kinds)))
		}
		res, err := s.trainKind(k, opts)
		if err != nil {
			return out, fmt.Errorf("train %s: %w", k, err)
		}
		out = append(out, res)
	}
	if opts.Progress != nil {
		opts.Progress(int64(len(kinds)), int64(len(kinds)))
	}
	return out, nil
}

func (s *Store) trainKind(k Kind, opts TrainOptions) (TrainResult, error) {
	res := TrainResult{Kind: k, KindName: k.String()}
	// What new records of the kind use now, and what a new one is
	// measured against. (The current dictionary may have learnt from the
	// held-out objects: that flatters it, so a retrain is kept only when
	// clearly better.) One that cannot be loaded is no baseline: measure
	// against none. Set before anything can stop training: a kind left
	// with too few objects, or whose training fails, keeps it, and said
	// "no dictionary" though stat named it.
	res.Against = s.opts.Dicts.Newest(uint8(k))
	if res.Against != dict.None {
		if _, err := s.opts.Dicts.Lookup(res.Against); err != nil {
			res.Against = dict.None
		}
	}
	if opts.OnlyMissing && s.opts.Dicts.Newest(uint8(k)) != dict.None {
		res.Reason = "has a dictionary already"
		return res, nil
	}
	objs, err := s.List(k, 0)
	if err != nil {
		return res, err
	}
	res.Objects = len(objs)
	if len(objs) < opts.MinObjects {
		res.Reason = fmt.Sprintf("%d object(s): a dictionary needs at least %d to learn from", len(objs), opts.MinObjects)
		return res, nil
	}
	// An even spread over the kind's objects, newest to oldest. Of each,
	// only its head is read (sampleHead): what the dictionary learns from,
	// and what it is measured on, so that training holds at most
	// Samples heads of dict.MaxSample, whatever the objects' size.
	step := max(1, len(objs)/opts.Samples)
	var sample [][]byte
	var sizes []int64 // the sampled objects' whole sizes
	unreadable := 0
	var firstErr error
	reuse := newReadReuse()
	defer reuse.close()
	for i := 0; i < len(objs) && len(sample) < opts.Samples; i += step {
		b, size, err := s.sampleHead(objs[i].ID, reuse)
		if err != nil {
			// verify reports it; training can do without, while enough
			// of the sample reads
			unreadable++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		sample = append(sample, b)
		sizes = append(sizes, size)
	}
	if unreadable > 0 && len(sample) < min(opts.MinObjects, opts.Samples) {
		// Not "training failed: no input provided": the objects are
		// there, and what stops them reading is what to fix.
		res.Reason = fmt.Sprintf("%d of the %d object(s) sampled cannot be read (the first: %v): a dictionary needs at least %d to learn from; `rook store verify` lists every object that does not read", unreadable, unreadable+len(sample), firstErr, opts.MinObjects)
		res.Unreadable = unreadable
		return res, nil
	}
	// Train on half, measure on the other half, so the estimate is not
	// flattered by measuring on what the dictionary was built from (with
	// few objects, both use all of them).
	var train, held [][]byte
	var heldSizes []int64
	split := len(sample) >= 2*opts.MinObjects
	for i, b := range sample {
		if !split || i%2 == 0 {
			train = append(train, b)
		}
		if !split || i%2 == 1 {
			held = append(held, b)
			heldSizes = append(heldSizes, sizes[i])
		}
	}
	res.Samples = len(train)
	id, err := s.dicts.NextID()
	if err != nil {
		return res, err
	}
	content, err := dict.Build(train, opts.Size, id)
	if err != nil {
		res.Reason = "training failed: " + err.Error()
		return res, nil
	}
	res.DictBytes = len(content)
	blockSize, packMax := s.packingOf(objs)
	base, with, heldRaw, err := s.measure(held, heldSizes, content, id, res.Against, blockSize, packMax)
	if err != nil {
		return res, err
	}
	// Scale the held-out saving to the kind's logical bytes.
	// A reader (a dry run) has the counters of the index it last read,
	// replaced under recentMu when it reads a newer one.
	if s.opts.Writable {
		s.mu.Lock()
	} else {
		s.recentMu.RLock()
	}
	kindBytes := int64(0)
	if kc := s.ctr.Kinds[k]; kc != nil {
		kindBytes = kc.Size
	}
	if s.opts.Writable {
		s.mu.Unlock()
	} else {
		s.recentMu.RUnlock()
	}
	if heldRaw > 0 {
		res.Gain = (base - with) * kindBytes / heldRaw
	}
	if res.Gain <= int64(len(content)) && res.Against != dict.None {
		res.Reason = fmt.Sprintf("a new one would save about %d bytes over dictionary %d, less than its own %d", max(res.Gain, 0), res.Against, len(content))
		return res, nil
	}
	if res.Gain <= int64(len(content)) {
		res.Reason = fmt.Sprintf("would save about %d bytes, less than its own %d", max(res.Gain, 0), len(content))
		return res, nil
	}
	if opts.DryRun {
		res.WouldKeep, res.Reason = true, "dry run"
		return res, nil
	}
	if res.DictID, err = s.dicts.Add(uint8(k), content, s.opts.Clock.Now()); err != nil {
		return res, err
	}
	res.Kept = true
	return res, nil
}

// packingOf is how a kind's objects are packed: in bulk blocks (an
// import's, or after gc or repack) when most of their bytes are, else in
// the blocks of everyday writes. A dictionary saves far less in a block of
// a MiB, where zstd already finds what the objects share, than in one of
// 64 KiB: measured in the wrong one, the corpus's dictionaries promised
// ~242 KiB and saved ~41, less than their own 61.
func (s *Store) packingOf(objs []ObjectInfo) (blockSize, packMax int) {
	blockRaw := map[blockKey]int64{}
	for _, o := range objs {
		if !o.Inline {
			blockRaw[blockKey{o.Segment, o.Offset}] += o.Size
		}
	}
	var bulk, all int64
	for _, raw := range blockRaw {
		all += raw
		if raw >= int64(s.opts.BulkBlockSize)/2 {
			bulk += raw
		}
	}
	if all > 0 && 2*bulk > all {
		return s.opts.BulkBlockSize, s.opts.BulkPackMax
	}
	return s.opts.BlockSize, s.opts.PackMax
}

// sampleHead reads the head of the object id that training uses, its
// first dict.MaxSample bytes (all of a smaller one), and says its whole
// size. An object alone in a big record is decoded no further than its
// head; any other is at most a packed block's size, read whole and let
// go once its head is copied. reuse is what the sample's heads are read
// with.
func (s *Store) sampleHead(id Key, reuse *readReuse) ([]byte, int64, error) {
	r, err := s.OpenObject(id)
	if err != nil {
		return nil, 0, err
	}
	r.reuse = reuse
	b, err := r.ReadRange(0, dict.MaxSample)
	if err != nil {
		return nil, 0, err
	}
	return b, r.Size(), nil
}

// measure packs objects as the store would (small ones into blocks of
// blockSize, those of packMax and more alone) and returns their stored
// size with the store's dictionary baseID (dict.None: none) and with the
// candidate, and their raw size. objs are the objects' heads (sampleHead)
// and sizes their whole sizes: each is packed by its whole size, as the
// store packs it, but only its head is compressed, and raw counts the
// whole sizes. So what a dictionary saves past an object's head is
// counted as nothing: it saves most at the start of a block, where zstd
// has no history of its own yet, and that part errs low. The sample
// itself can make it err high (held-out objects packed without the similar
// neighbours a real block gives zstd): docs/storage.md has the figures.
// Objects no larger than a head are measured whole, as before.
func (s *Store) measure(objs [][]byte, sizes []int64, content []byte, id, baseID uint32, blockSize, packMax int) (base, with, raw int64, err error) {
	trial := newEncoder(s.opts.Level, trialSet{id: id, content: content})
	var blocks [][]byte
	var cur [][]byte
	curRaw := int64(0)
	for i, b := range objs {
		raw += sizes[i]
		if sizes[i] >= int64(packMax) {
			blocks = append(blocks, encodeBlock([][]byte{b}))
			continue
		}
		cur = append(cur, b)
		curRaw += sizes[i]
		if curRaw >= int64(blockSize) {
			blocks = append(blocks, encodeBlock(cur))
			cur, curRaw = nil, 0
		}
	}
	if len(cur) > 0 {
		blocks = append(blocks, encodeBlock(cur))
	}
	var p, w []byte // only their lengths count: reused for every block
	for _, blk := range blocks {
		_, _, p, err = s.enc.encode(blk, baseID, p[:0])
		if err != nil {
			return 0, 0, 0, err
		}
		_, _, w, err = trial.encode(blk, id, w[:0])
		if err != nil {
			return 0, 0, 0, err
		}
		base += int64(len(p))
		with += int64(len(w))
	}
	return base, with, raw, nil
}

// trialSet is a one-dictionary set for measuring a candidate.
type trialSet struct {
	id      uint32
	content []byte
}

func (t trialSet) Lookup(id uint32) ([]byte, error) {
	if id == t.id {
		return t.content, nil
	}
	return nil, fmt.Errorf("dictionary %d is not the one being measured", id)
}

func (t trialSet) Newest(uint8) uint32 { return t.id }

// Dictionaries lists the store's dictionaries.
func (s *Store) Dictionaries() []dict.Info {
	if s.dicts == nil {
		return nil
	}
	return s.dicts.List()
}

// MissingDictionaries lists the dictionary ids given out whose file is
// not there (dict.Dir.Missing).
func (s *Store) MissingDictionaries() []uint32 {
	if s.dicts == nil {
		return nil
	}
	return s.dicts.Missing()
}

// DropsCutShort lists the dictionaries marked dropped whose file is
// there still: a drop cut short after its mark (a crash, a failed delete).
// None is any kind's newest (nothing compresses with it); `rook store
// repack --drop-dictionary ID` again deletes it.
func (s *Store) DropsCutShort() []uint32 {
	if s.dicts == nil {
		return nil
	}
	var out []uint32
	for _, id := range s.dicts.Dropped() {
		if present, _ := s.dicts.Known(id); present {
			out = append(out, id)
		}
	}
	return out
}

// DictionaryIDsError says why the record of the dictionary ids given out
// cannot be read (dict.Dir.IDsError): no dictionary can be trained until
// it is put back or removed.
func (s *Store) DictionaryIDsError() error {
	if s.dicts == nil {
		return nil
	}
	return s.dicts.IDsError()
}
