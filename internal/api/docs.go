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

const landing = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Mosaic</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{font-family:ui-monospace,monospace}</style></head>
<body><h1>Mosaic core</h1><p>The core is running. The API is documented at <a href="/docs">/docs</a>
(<a href="/openapi.json">OpenAPI</a>); every <code>/api</code> route needs the bearer token that
<code>mosaic serve</code> printed the path of.</p>
<p>From a terminal: <code>mosaic status</code>, <code>mosaic resources</code>, <code>mosaic idle --gpus 2</code>.</p></body></html>`

func serveLanding(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(landing))
}
