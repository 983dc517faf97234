# A stand-in ingest server for the agent benchmark: answers every POST 200 accepted.
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404); self.send_header("Content-Length","0"); self.end_headers()
    def do_POST(self):
        n=int(self.headers.get("Content-Length","0")); self.rfile.read(n)
        body=json.dumps({"status":"accepted","seq":0}).encode()
        self.send_response(200); self.send_header("Content-Type","application/json")
        self.send_header("Content-Length",str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self,*a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
