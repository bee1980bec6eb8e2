# A tiny extension API server for the aggregation e2e test (test/e2e/edgelet/aggregation.test.ts):
# socat terminates TLS in the pod and runs this busybox sh script per connection. It serves
# wardle.example.com/v1alpha1: its discovery (an APIResourceList) and a list of flunders, as a
# Table when asked for one; each answer names the X-Remote-User and X-Remote-Group values the
# aggregator sent, so the test sees who the backend was told is asking. A watch of flunders
# sends two events three seconds apart.
cr=$(printf '\r')
read -r method path proto
accept=""; user=""; groups=""
while IFS= read -r line; do
  line=${line%"$cr"}
  [ -z "$line" ] && break
  case "$line" in
    [Aa]ccept:*) accept=${line#*: } ;;
    [Xx]-[Rr]emote-[Uu]ser:*) user=${line#*: } ;;
    [Xx]-[Rr]emote-[Gg]roup:*) groups="$groups${groups:+,}${line#*: }" ;;
  esac
done
gv=/apis/wardle.example.com/v1alpha1
status="200 OK"
case "${path%%\?*}" in
  "$gv")
    body='{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"wardle.example.com/v1alpha1","resources":[{"name":"flunders","singularName":"flunder","namespaced":true,"kind":"Flunder","verbs":["get","list"],"shortNames":["fl"]}]}' ;;
  "$gv"/namespaces/*/flunders)
    ns=${path#"$gv"/namespaces/}; ns=${ns%%/*}
    case "$path" in
      *watch=1* | *watch=true*)
        # a watch: events a few seconds apart on a response that ends when the connection does
        printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n'
        for n in one two; do
          printf '{"type":"ADDED","object":{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"flunder-%s","namespace":"%s"}}}\n' "$n" "$ns"
          [ "$n" = two ] || sleep 3
        done
        exit 0 ;;
    esac
    case "$accept" in
      *as=Table*)
        body='{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"1"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"name","priority":0},{"name":"Seen-By","type":"string","format":"","description":"who asked","priority":0}],"rows":[{"cells":["flunder-one","'"$user"'"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"flunder-one","namespace":"'"$ns"'"}}}]}' ;;
      *)
        body='{"kind":"FlunderList","apiVersion":"wardle.example.com/v1alpha1","metadata":{"resourceVersion":"1"},"items":[{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"flunder-one","namespace":"'"$ns"'","annotations":{"seen-user":"'"$user"'","seen-groups":"'"$groups"'"}}}]}' ;;
    esac ;;
  *)
    status="404 Not Found"
    body='{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"not found","reason":"NotFound","code":404}' ;;
esac
printf 'HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' "$status" "${#body}" "$body"
