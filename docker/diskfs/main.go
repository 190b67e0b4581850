// kchaos-diskfs: a pass-through FUSE file system under a Kafka log directory that fails on demand.
//
// It serves the directory -real at -mount, and reads what to fail from the JSON file -control
// (rewritten by kchaos's disk faults; looked at every 50 ms):
//
//	{"full": true}                                  writes, creations and growth fail with ENOSPC
//	{"error_ops": ["read", "write", "fsync"]}       those operations fail with EIO
//	{"latency_ms": 200, "jitter_ms": 50,
//	 "slow_ops": ["write", "fsync"]}                those operations wait first
//
// An empty or absent file fails nothing. The mount lives in the container's own mount namespace and
// goes with it; nothing on the host is touched.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"math/rand"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// faults is what the control file asks for.
type faults struct {
	Full      bool     `json:"full"`
	ErrorOps  []string `json:"error_ops"`
	LatencyMs int      `json:"latency_ms"`
	JitterMs  int      `json:"jitter_ms"`
	SlowOps   []string `json:"slow_ops"`
}

func (f *faults) has(ops []string, op string) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

var current atomic.Pointer[faults]

// before is called at the start of every operation ``op``: it waits when the op is slowed and
// returns the error the op must fail with (0: none). ``grows`` marks operations that take space.
func before(op string, grows bool) syscall.Errno {
	f := current.Load()
	if f == nil {
		return 0
	}
	if f.LatencyMs > 0 && f.has(f.SlowOps, op) {
		d := f.LatencyMs
		if f.JitterMs > 0 {
			d += rand.Intn(2*f.JitterMs+1) - f.JitterMs
		}
		if d > 0 {
			time.Sleep(time.Duration(d) * time.Millisecond)
		}
	}
	if f.has(f.ErrorOps, op) {
		return syscall.EIO
	}
	if f.Full && grows {
		return syscall.ENOSPC
	}
	return 0
}

// watch reloads the control file whenever its time or size changes.
func watch(path string) {
	var seen time.Time
	var size int64 = -1
	for {
		st, err := os.Stat(path)
		if err != nil {
			if size != -1 {
				current.Store(nil)
				size = -1
			}
		} else if !st.ModTime().Equal(seen) || st.Size() != size {
			seen, size = st.ModTime(), st.Size()
			body, err := os.ReadFile(path)
			f := &faults{}
			if err == nil && len(body) > 0 {
				if err := json.Unmarshal(body, f); err != nil {
					log.Printf("kchaos-diskfs: %s: %v", path, err)
					f = &faults{}
				}
			}
			current.Store(f)
			log.Printf("kchaos-diskfs: faults now %s", string(body))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// node is a loopback node whose files and growth fail as the control file says.
type node struct {
	fs.LoopbackNode
}

func newNode(root *fs.LoopbackRoot, parent *fs.Inode, name string, st *syscall.Stat_t) fs.InodeEmbedder {
	return &node{fs.LoopbackNode{RootData: root}}
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{fh}, fl, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := before("write", true); e != 0 {
		return nil, nil, 0, e
	}
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, &file{fh}, fl, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := before("write", true); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, ok := in.GetSize(); ok {
		if e := before("write", true); e != 0 {
			return e
		}
	}
	if ff, ok := f.(*file); ok {
		f = ff.FileHandle
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if ff, ok := f.(*file); ok {
		f = ff.FileHandle
	}
	return n.LoopbackNode.Getattr(ctx, f, out)
}

// file is a loopback file whose reads, writes and syncs fail as the control file says.
type file struct {
	fs.FileHandle
}

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := before("read", false); e != 0 {
		return nil, e
	}
	return f.FileHandle.(fs.FileReader).Read(ctx, dest, off)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if e := before("write", true); e != 0 {
		return 0, e
	}
	return f.FileHandle.(fs.FileWriter).Write(ctx, data, off)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if e := before("fsync", false); e != 0 {
		return e
	}
	return f.FileHandle.(fs.FileFsyncer).Fsync(ctx, flags)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if e := before("write", true); e != 0 {
		return e
	}
	return f.FileHandle.(fs.FileAllocater).Allocate(ctx, off, size, mode)
}

func (f *file) Flush(ctx context.Context) syscall.Errno {
	return f.FileHandle.(fs.FileFlusher).Flush(ctx)
}

func (f *file) Release(ctx context.Context) syscall.Errno {
	return f.FileHandle.(fs.FileReleaser).Release(ctx)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.FileHandle.(fs.FileGetattrer).Getattr(ctx, out)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, ok := in.GetSize(); ok {
		if e := before("write", true); e != 0 {
			return e
		}
	}
	return f.FileHandle.(fs.FileSetattrer).Setattr(ctx, in, out)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.FileHandle.(fs.FileLseeker).Lseek(ctx, off, whence)
}

func main() {
	real := flag.String("real", "", "the directory whose files are served")
	mount := flag.String("mount", "", "where they are served")
	control := flag.String("control", "", "the JSON file that says what to fail")
	flag.Parse()
	if *real == "" || *mount == "" || *control == "" {
		log.Fatal("kchaos-diskfs: -real, -mount and -control are required")
	}
	go watch(*control)
	var st syscall.Stat_t
	if err := syscall.Stat(*real, &st); err != nil {
		log.Fatalf("kchaos-diskfs: %s: %v", *real, err)
	}
	root := &fs.LoopbackRoot{Path: *real, Dev: uint64(st.Dev), NewNode: newNode}
	root.RootNode = newNode(root, nil, "", &st)
	sec := time.Second
	server, err := fs.Mount(*mount, root.RootNode, &fs.Options{
		AttrTimeout: &sec, EntryTimeout: &sec,
		MountOptions: fuse.MountOptions{AllowOther: true, DirectMount: true, FsName: *real, Name: "kchaos-diskfs"},
	})
	if err != nil {
		log.Fatalf("kchaos-diskfs: mount %s: %v", *mount, err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; _ = server.Unmount() }()
	server.Wait()
}
