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

// Package dashboardshots takes the screenshots of the dashboard's views that
// docs/ shows, in a real headless Chromium (test/framework/browser): `make
// screenshots` runs TestScreenshots with -update-screenshots. See
// docs/testing.md#browser-tests.
package dashboardshots

import (
	"bytes"
	"flag"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubestellar/workload-stager/test/framework/browser"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

var update = flag.Bool("update-screenshots", false, "write the screenshots of the views that have a file under docs/")

// view is one page to photograph: url opens it, ready waits until it shows
// what the picture is for.
type view struct {
	name string
	// file is the screenshot's path from the repository's root, committed
	// under docs/; empty for a view whose picture is not committed, which
	// goes to a temporary directory.
	file  string
	url   func(t *testing.T) string
	ready func(b *browser.Browser)
}

// views are the pages photographed. The dashboard's views (issue 58) come
// here, against the e2e stack; until then a static page stands in, so that
// the target and the harness are exercised.
var views = []view{{
	name: "static-placeholder",
	url:  staticPage,
	ready: func(b *browser.Browser) {
		b.WaitText("#stages", "prod")
	},
}}

// TestScreenshots opens every view in a real browser and photographs it.
// With -update-screenshots the committed pictures are rewritten; without it
// they are only checked to be there and to be PNGs, as pixels differ with
// the machine's fonts.
func TestScreenshots(t *testing.T) {
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := browser.New(t, browser.Options{Width: 1280, Height: 720})
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			b.Open(v.url(t))
			v.ready(b)
			path := filepath.Join(t.TempDir(), v.name+".png")
			if v.file != "" && *update {
				path = filepath.Join(root, v.file)
			}
			if v.file == "" || *update {
				b.Screenshot(path)
				t.Logf("wrote %s", path)
			} else {
				path = filepath.Join(root, v.file)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run `make screenshots`", err)
			}
			if _, err := png.Decode(bytes.NewReader(data)); err != nil {
				t.Fatalf("%s is no PNG: %v; run `make screenshots`", path, err)
			}
		})
	}
	if errs := b.ConsoleErrors(); len(errs) != 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// staticPage writes a small page, a stand-in for a dashboard view, to a
// temporary directory and serves it.
func staticPage(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"index.html": `<!doctype html><html><head><title>Workload Stager</title><link rel="icon" href="data:,"><link rel="stylesheet" href="style.css"></head>
<body><h1>nginx <small>wds1 / default</small></h1>
<ol id="stages"><li class="done">dev<br><small>2/2 clusters</small></li><li class="running">test<br><small>1/1 progressing</small></li><li>prod<br><small>0/2</small></li></ol>
<p>Revision v1 → v2. A stand-in page: the dashboard's views replace it.</p></body></html>`,
		"style.css": `body { font-family: sans-serif; margin: 2em; color: #222; }
ol { display: flex; gap: 1em; list-style: none; padding: 0; }
li { border: 2px solid #999; border-radius: 6px; padding: 1em 2em; }
li.done { border-color: #2a7; background: #e6f6ee; } li.running { border-color: #27c; background: #e8f0fb; }`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}
