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

package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
)

// sessionCookie names the cookie holding a browser's session.
const sessionCookie = "stager_session"

// sessions makes and checks sessions and their CSRF tokens: a session is a
// random identifier in an HttpOnly, SameSite=Strict cookie; its token is an
// HMAC of it under a key of this process, so that only a page the dashboard
// served to that browser knows it.
type sessions struct {
	key []byte
}

func newSessions() (*sessions, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("making the CSRF key: %w", err)
	}
	return &sessions{key: key}, nil
}

// token returns the CSRF token of the request's session, starting a session
// (setting its cookie) when the request has none.
func (ss *sessions) token(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil && validSession(c.Value) {
		return ss.tokenOf(c.Value)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24)
	id := base64.RawURLEncoding.EncodeToString(raw)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return ss.tokenOf(id)
}

func (ss *sessions) tokenOf(session string) string {
	mac := hmac.New(sha256.New, ss.key)
	mac.Write([]byte(session))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// valid reports whether token is the CSRF token of the request's session,
// comparing in constant time.
func (ss *sessions) valid(r *http.Request, token string) bool {
	c, err := r.Cookie(sessionCookie)
	if err != nil || !validSession(c.Value) || token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(ss.tokenOf(c.Value)), []byte(token)) == 1
}

// validSession reports whether id looks like a session identifier the
// dashboard makes.
func validSession(id string) bool {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil && len(raw) == 32
}
