print("empalink-bench: no benchmarks yet")
