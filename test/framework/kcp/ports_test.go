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

package kcp

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestStartOnATakenPortFailsNamingIt checks that Start, told which ports to
// use, neither picks others nor launches kcp when one is taken: each port in
// turn is held by a listener.
func TestStartOnATakenPortFailsNamingIt(t *testing.T) {
	for i := range 3 {
		// The taken port is a listener's own, so it cannot be lost meanwhile.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		free, err := freePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		taken := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		free[i] = taken
		var ports []int
		for _, p := range free {
			n, _ := strconv.Atoi(p)
			ports = append(ports, n)
		}
		// /bin/false would exit at once: an error that is not ErrPortTaken
		// shows Start launched it.
		_, err = Start(t.Context(), Options{WorkDir: t.TempDir(), Binary: "/bin/false",
			Ports: Ports{API: ports[0], EtcdClient: ports[1], EtcdPeer: ports[2]}})
		_ = l.Close()
		if !errors.Is(err, ErrPortTaken) || !strings.Contains(err.Error(), "127.0.0.1:"+taken) {
			t.Errorf("with port %s taken, Start returned %v, want ErrPortTaken naming it", taken, err)
		}
	}
}
