#!/usr/bin/env python3
"""The network tests' fake web server (standard library only), on every
address of the "internet" namespace: GET / answers "inet-ok", /host echoes
the Host header it got, /redirect?to=URL answers 302 to URL.
Usage: fakeweb.py PORT"""
import http.server
import sys
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/redirect":
            to = urllib.parse.parse_qs(url.query).get("to", ["http://169.254.169.254/"])[0]
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = (self.headers.get("Host", "none") if url.path == "/host" else "inet-ok") + "\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
