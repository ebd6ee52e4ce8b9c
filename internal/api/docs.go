package api

import (
	_ "embed"
	"net/http"
)

// docsPage renders /openapi.json in the browser with a few lines of vanilla
// JavaScript: no CDN, no fonts, works offline.
//
//go:embed docs.html
var docsPage []byte

func serveDocs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'")
	w.Write(docsPage)
}
