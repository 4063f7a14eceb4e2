// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// Tool returns the path of a program hack/tool.sh builds: $envVar when set,
// otherwise the path `hack/tool.sh name` prints, which builds the program
// from its pinned module the first time. It fails with
// a message naming `make test`, which prepares the program, when neither
// works.
func Tool(envVar, name string) (string, error) {
	if path := os.Getenv(envVar); path != "" {
		if err := CheckExecutable(path); err != nil {
			return "", fmt.Errorf("$%s: %w; run the tests through `make test`, which builds %s and sets %s", envVar, err, name, envVar)
		}
		return path, nil
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("$%s is not set and the repository (for hack/tool.sh) was not found: %w; run the tests through `make test`, which builds %s and sets %s", envVar, err, name, envVar)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "tool.sh"), name)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("$%s is not set and `hack/tool.sh %s` failed: %w: %s; run the tests through `make test`, which builds %s and sets %s", envVar, name, err, strings.TrimSpace(stderr.String()), name, envVar)
	}
	path := strings.TrimSpace(string(out))
	if err := CheckExecutable(path); err != nil {
		return "", fmt.Errorf("`hack/tool.sh %s` printed an unusable path: %w; run the tests through `make test`", name, err)
	}
	return path, nil
}

// CheckExecutable fails unless path names an executable regular file.
func CheckExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

var moduleDirs struct {
	sync.Mutex
	dirs map[string]string
}

// ModuleDir returns the directory, in the module cache, of a module of a
// tools module's graph (hack/tools/<toolsModule>, at the version that graph
// selects), running `go list -m` there and, when the module is not in the
// cache yet, `go mod download`, with noSumDB as GONOSUMDB. Results are
// cached for the process.
func ModuleDir(toolsModule, module, noSumDB string) (string, error) {
	moduleDirs.Lock()
	defer moduleDirs.Unlock()
	key := toolsModule + " " + module
	if dir, ok := moduleDirs.dirs[key]; ok {
		return dir, nil
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("locating the repository for hack/tools/%s: %w", toolsModule, err)
	}
	toolsDir := filepath.Join(root, "hack", "tools", toolsModule)
	goCmd := func(args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = toolsDir
		cmd.Env = append(os.Environ(), "GONOSUMDB="+noSumDB)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s in %s: %w: %s", strings.Join(args, " "), toolsDir, err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	dir, err := goCmd("list", "-m", "-f", "{{.Dir}}", module)
	if err != nil {
		return "", err
	}
	if dir == "" {
		if _, err := goCmd("mod", "download", module); err != nil {
			return "", err
		}
		if dir, err = goCmd("list", "-m", "-f", "{{.Dir}}", module); err != nil {
			return "", err
		}
		if dir == "" {
			return "", fmt.Errorf("module %s is not in the module cache even after `go mod download` in %s", module, toolsDir)
		}
	}
	if moduleDirs.dirs == nil {
		moduleDirs.dirs = map[string]string{}
	}
	moduleDirs.dirs[key] = dir
	return dir, nil
}

// ExistingDir returns filepath.Join(elem...) if it is a directory.
func ExistingDir(elem ...string) (string, error) {
	dir := filepath.Join(elem...)
	info, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return dir, nil
}
