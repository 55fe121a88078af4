#!/bin/bash
# fuzz_flat_seeds.sh DIR: seed lines for fuzz_flat, as the timeline writes them
# (events with states, a header), and nesting at and past the scanner's depth.
set -euo pipefail
mkdir -p "$1"
i=0
for s in '{"kind":"header","job":"bench","comm":"0x1","nranks":8,"ranks":[{"rank":0,"host":"node-0"}]}' \
         '{"kind":"event","type":"Coll","rank":3,"pid":1003,"tid":1,"id":7,"parent":0,"start_ns":1000000000,"stop_ns":1000002000,"flags":["graph"],"seq":0,"func":"AllReduce","datatype":"ncclFloat32","count":1048576,"root":-1,"complete_ns":null,"states":[]}' \
         '{"kind":"event","type":"KernelCh","rank":1,"channel":2,"gpu_start_ns":5,"gpu_stop_ns":9,"states":[{"state":"x","ts_ns":1}]}' \
         '{"kind":"event","type":"ProxyStep","rank":0,"step":3,"states":[{"state":"ProxyStepSendGPUWait","ts_ns":5000001100,"arg":0},{"state":"ProxyStepSendWait","ts_ns":5000001400,"arg":-7}]}' \
         '{"a":[{"b":[1]}],"c":{"d":{}},"e":[[],[2,"x"],{}]}' \
         '{"kind":"end","events":3,"next_cursor":"9.1.2"}' '{"a":true,"b":false,"c":null,"d":-0}'; do
  printf '%s' "$s" >"$1/seed$i"; i=$((i + 1))
done
