// Command ocibuild writes a single-image OCI image layout as a tar archive
// (oci-layout, index.json, blobs/sha256/...) from host directories, with no
// registry and no docker. Each -layer directory becomes one gzip tar layer
// (owner root, fixed timestamps, so equal inputs give equal digests). The
// index carries the io.containerd.image.name annotation, so
// `ctr -n k8s.io images import out.tar` names the image.
//
//	ocibuild -o app-v1.tar -name inplace.local/app:v1 \
//	  -layer rootfs/busybox -layer rootfs/app-v1 \
//	  -entrypoint '["/app.sh"]' -env PATH=/bin -digest-file app-v1.digest
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// epoch is the modification time of every file, for reproducible digests.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type blob struct {
	digest string
	data   []byte
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// layerTar returns the uncompressed tar of dir's contents.
func layerTar(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		hdr.PAXRecords = nil
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gz(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func run() error {
	var (
		out, name, entrypoint, cmd, workdir, digestFile string
		layers, env                                     listFlag
	)
	flag.StringVar(&out, "o", "", "output tar archive (OCI image layout)")
	flag.StringVar(&name, "name", "", "image reference, e.g. inplace.local/app:v1")
	flag.Var(&layers, "layer", "host directory to add as a layer (repeatable, bottom first)")
	flag.StringVar(&entrypoint, "entrypoint", "", "entrypoint as a JSON array")
	flag.StringVar(&cmd, "cmd", "", "cmd as a JSON array")
	flag.Var(&env, "env", "KEY=VALUE environment entry (repeatable)")
	flag.StringVar(&workdir, "workdir", "/", "working directory")
	flag.StringVar(&digestFile, "digest-file", "", "also write the manifest digest to this file")
	flag.Parse()
	if out == "" || name == "" || len(layers) == 0 {
		return fmt.Errorf("-o, -name and at least one -layer are required")
	}

	type imageConfig struct {
		Entrypoint []string `json:"Entrypoint,omitempty"`
		Cmd        []string `json:"Cmd,omitempty"`
		Env        []string `json:"Env,omitempty"`
		WorkingDir string   `json:"WorkingDir,omitempty"`
	}
	cfg := imageConfig{Env: env, WorkingDir: workdir}
	if entrypoint != "" {
		if err := json.Unmarshal([]byte(entrypoint), &cfg.Entrypoint); err != nil {
			return fmt.Errorf("-entrypoint: %w", err)
		}
	}
	if cmd != "" {
		if err := json.Unmarshal([]byte(cmd), &cfg.Cmd); err != nil {
			return fmt.Errorf("-cmd: %w", err)
		}
	}

	var blobs []blob
	var layerDescs []descriptor
	var diffIDs []string
	for _, dir := range layers {
		raw, err := layerTar(dir)
		if err != nil {
			return fmt.Errorf("layer %s: %w", dir, err)
		}
		comp, err := gz(raw)
		if err != nil {
			return err
		}
		diffIDs = append(diffIDs, sha(raw))
		d := sha(comp)
		blobs = append(blobs, blob{d, comp})
		layerDescs = append(layerDescs, descriptor{
			MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: d, Size: int64(len(comp)),
		})
	}

	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       cfg,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	configDesc := descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: sha(config), Size: int64(len(config))}
	blobs = append(blobs, blob{configDesc.Digest, config})

	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        configDesc,
		"layers":        layerDescs,
	})
	if err != nil {
		return err
	}
	manifestDigest := sha(manifest)
	blobs = append(blobs, blob{manifestDigest, manifest})

	tag := name[strings.LastIndex(name, ":")+1:]
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json",
			Digest:    manifestDigest,
			Size:      int64(len(manifest)),
			Platform:  &platform{Architecture: runtime.GOARCH, OS: "linux"},
			Annotations: map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	if err != nil {
		return err
	}

	// Write the archive next to its final name, then rename: never a partial file.
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	add := func(name string, data []byte, mode int64) error {
		hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}
		if data == nil {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return err
	}
	if err := add("index.json", index, 0o644); err != nil {
		return err
	}
	if err := add("blobs/", nil, 0o755); err != nil {
		return err
	}
	if err := add("blobs/sha256/", nil, 0o755); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, b := range blobs {
		if seen[b.digest] {
			continue
		}
		seen[b.digest] = true
		if err := add("blobs/sha256/"+strings.TrimPrefix(b.digest, "sha256:"), b.data, 0o644); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	if digestFile != "" {
		return os.WriteFile(digestFile, []byte(manifestDigest+"\n"), 0o644)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ocibuild:", err)
		os.Exit(1)
	}
}
