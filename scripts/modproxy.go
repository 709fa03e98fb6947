//go:build ignore

// Modproxy adds a module of this repository, as its working tree holds it now, to a
// directory laid out as a Go module proxy (GOPROXY=file:///that/directory):
//
//	go run scripts/modproxy.go -proxy DIR -version VERSION [-gomod FILE -gosum FILE] MODULE_DIR...
//
// For each module directory it writes <module>/@v/VERSION.info, .mod and .zip and adds
// VERSION to <module>/@v/list. The zip holds the files git knows (tracked, or untracked and
// not ignored) under the module directory, except those of nested modules; -gomod and
// -gosum (one module directory only) serve other go.mod and go.sum files in place of the
// module's, as a release that updated them would. The scripts check-deps.sh and
// check-install.sh use it to resolve and install this repository's modules without a
// replace directive.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
)

func main() {
	proxy := flag.String("proxy", "", "the proxy directory to write")
	version := flag.String("version", "", "the version to serve the modules at")
	gomod := flag.String("gomod", "", "a go.mod to serve in place of the module's")
	gosum := flag.String("gosum", "", "a go.sum to serve in place of the module's")
	flag.Parse()
	if *proxy == "" || *version == "" || flag.NArg() == 0 || (*gomod != "" || *gosum != "") && flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/modproxy.go -proxy DIR -version VERSION [-gomod FILE -gosum FILE] MODULE_DIR...")
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		if err := serve(*proxy, *version, dir, map[string]string{"go.mod": *gomod, "go.sum": *gosum}); err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// serve writes the module in dir to the proxy at version. A non-empty value of override
// names the file to serve in place of the module's file named by its key.
func serve(proxy, version, dir string, override map[string]string) error {
	source := func(f string) string {
		if o := override[f]; o != "" {
			return o
		}
		return filepath.Join(dir, filepath.FromSlash(f))
	}
	gomod, err := os.ReadFile(source("go.mod"))
	if err != nil {
		return err
	}
	modPath, err := modulePath(gomod)
	if err != nil {
		return err
	}
	files, err := moduleFiles(dir)
	if err != nil {
		return err
	}
	if override["go.sum"] != "" && !slices.Contains(files, "go.sum") {
		files = append(files, "go.sum")
	}
	zipped, err := zipModule(source, modPath+"@"+version, files)
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(escape(modPath)), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	for ext, data := range map[string][]byte{".info": info, ".mod": gomod, ".zip": zipped} {
		if err := os.WriteFile(filepath.Join(vdir, version+ext), data, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(vdir, "list"), version)
}

// modulePath returns the path of the module statement of a go.mod.
func modulePath(gomod []byte) (string, error) {
	for line := range strings.Lines(string(gomod)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`), nil
		}
	}
	return "", errors.New("go.mod has no module statement")
}

// moduleFiles lists, relative to dir and with slashes, the regular files git knows under
// dir, leaving out the directories of nested modules.
func moduleFiles(dir string) ([]string, error) {
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files (this needs a git checkout of the repository): %w", err)
	}
	var files, nested []string
	for _, f := range strings.Split(string(out), "\x00") {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f)))
		if f == "" || err != nil || !fi.Mode().IsRegular() {
			continue // a deleted tracked file, a symlink
		}
		if path.Base(f) == "go.mod" && f != "go.mod" {
			nested = append(nested, path.Dir(f)+"/")
		}
		files = append(files, f)
	}
	files = slices.DeleteFunc(files, func(f string) bool {
		return slices.ContainsFunc(nested, func(n string) bool { return strings.HasPrefix(f, n) })
	})
	slices.Sort(files)
	return files, nil
}

// zipModule returns the module zip of files, each under prefix/, read from source(file).
func zipModule(source func(string) string, prefix string, files []string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		data, err := os.ReadFile(source(f))
		if err != nil {
			return nil, err
		}
		w, err := zw.Create(prefix + "/" + f)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// escape is the module path as a proxy spells it: each upper-case letter becomes "!" and
// its lower case.
func escape(modPath string) string {
	var b strings.Builder
	for _, r := range modPath {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// addToList adds version to the proxy's list file of a module, once.
func addToList(list, version string) error {
	b, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(b))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}
