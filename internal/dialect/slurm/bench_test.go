package slurm

import (
	"bytes"
	"strconv"
	"testing"
)

// genQueue builds QueueCommand output for n jobs over a few partitions and users.
func genQueue(n int) []byte {
	parts := []string{"cpu", "gpuA100", "gpuH100,gpuA100", "debug"}
	states := []string{"PENDING", "RUNNING", "RUNNING", "COMPLETING", "PENDING", "SUSPENDED"}
	var b bytes.Buffer
	b.Grow(n * 40)
	for i := range n {
		b.WriteString(strconv.Itoa(1000000 + i))
		b.WriteByte('|')
		b.WriteString(parts[i%len(parts)])
		b.WriteString("|user")
		b.WriteString(strconv.Itoa(i % 97))
		b.WriteByte('|')
		b.WriteString(states[i%len(states)])
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkSqueueParse100k parses squeue output for 100k jobs (target ≤ 100 ms/op).
func BenchmarkSqueueParse100k(b *testing.B) {
	out := genQueue(100_000)
	b.SetBytes(int64(len(out)))
	b.ResetTimer()
	for b.Loop() {
		jobs, err := ParseQueue(out)
		if err != nil || len(jobs) != 100_000 {
			b.Fatalf("%d jobs, %v", len(jobs), err)
		}
	}
}

// BenchmarkSqueueParseAndAggregate100k also folds the jobs into partition records.
func BenchmarkSqueueParseAndAggregate100k(b *testing.B) {
	out := genQueue(100_000)
	nodes, err := ParseSinfo(fixture(b, "sinfo-alpha-mixed.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		jobs, err := ParseQueue(out)
		if err != nil {
			b.Fatal(err)
		}
		recs := PartitionRecords(nodes)
		ApplyQueue(recs, jobs, "user3")
	}
}
