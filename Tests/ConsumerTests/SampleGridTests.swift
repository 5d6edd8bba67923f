import Consumer
import Testing

@Suite struct SampleGridTests {
    @Test func dropsSamplesBeforeTheStartAndAppendsContiguousOnes() {
        var grid = SampleGrid(start: 100, rate: 4, columns: 1, maximumFillSeconds: 1)
        #expect(grid.place(time: 99.5, samples: [1, 2, 3, 4]) == .rows([3, 4], filled: 0))
        #expect(grid.droppedBeforeStart == 2)
        #expect(grid.place(time: 100.5, samples: [5, 6]) == .rows([5, 6], filled: 0))
        #expect(grid.rows == 4)
        #expect(grid.endTime == 101)
    }

    @Test func fillsAShortLossByInterpolationSoEverySampleKeepsItsRow() {
        var grid = SampleGrid(start: 100, rate: 4, columns: 1, maximumFillSeconds: 1)
        _ = grid.place(time: 100, samples: [0, 1])
        // 100.5 and 100.75 lost; 101.0 arrives as the next message.
        #expect(grid.place(time: 101, samples: [4]) == .rows([2, 3, 4], filled: 2))
        #expect(grid.rows == 5)
        #expect(grid.filled == 2)
        #expect(grid.fills.map(\.row) == [2] && grid.fills.map(\.count) == [2])
    }

    @Test func accFillsAreIntegers() {
        var grid = SampleGrid(start: 0, rate: 32, columns: 3, maximumFillSeconds: 1)
        _ = grid.place(time: 0, samples: [0, 0, 0])
        #expect(grid.place(time: 2.0 / 32, samples: [3, 3, 3]) == .rows([2, 2, 2, 3, 3, 3], filled: 1))
    }

    @Test func aLongLossOrABackwardJumpSplits() {
        var grid = SampleGrid(start: 100, rate: 4, columns: 1, maximumFillSeconds: 1)
        _ = grid.place(time: 100, samples: [0])
        #expect(grid.place(time: 101.5, samples: [1]) == .split)
        #expect(grid.place(time: 99.9, samples: [1]) == .split)
        #expect(grid.rows == 1)
        // A sample's row is its time's nearest grid index.
        #expect(grid.place(time: 100.25 + 0.1, samples: [1]) == .rows([1], filled: 0))
    }

    @Test func aSampleStaysOnTheRowNearestItsTimeAfterAClockJump() {
        var grid = SampleGrid(start: 0, rate: 4, columns: 1, maximumFillSeconds: 1)
        // Phase +0.45 of a sample: rows 0 and 1.
        #expect(grid.place(time: 0.45 / 4, samples: [0, 1]) == .rows([0, 1], filled: 0))
        // The same phase with the last bits off: still the next row.
        #expect(grid.place(time: 2.4999 / 4, samples: [2]) == .rows([2], filled: 0))
        // The clock jumped forward by 0.4 of a sample plus one sample: position 4.85 is nearest row 5.
        #expect(grid.place(time: 4.85 / 4, samples: [5]) == .rows([3, 4, 5], filled: 2))
    }

    @Test func aShortLateStartIsPaddedWithTheFirstSample() {
        var grid = SampleGrid(start: 100, rate: 4, columns: 1, maximumFillSeconds: 1)
        #expect(grid.place(time: 100.5, samples: [7]) == .rows([7, 7, 7], filled: 2))
        var late = SampleGrid(start: 100, rate: 4, columns: 1, maximumFillSeconds: 1)
        #expect(late.place(time: 103, samples: [7]) == .dropped)
    }

    @Test func aClockSteppedBackByAFractionOfASampleDropsOneSampleAndShiftsNone() {
        // The CI failure of test_a_broker_restart_loses_no_sample_of_the_session: a stream at phase −0.34 of a
        // sample, then the edge's clock stepped back by 0.21 of a sample. Keeping the phase put every later sample
        // a row late, 0.56 of a sample from its own time. Here: phase −0.4, a step back of 0.2. The one sample whose
        // nearest row is taken is dropped and counted; every other sample lies on the row nearest its time.
        var grid = SampleGrid(start: 0, rate: 4, columns: 1, maximumFillSeconds: 1)
        #expect(grid.place(time: -0.4 / 4, samples: [0, 1, 2]) == .rows([0, 1, 2], filled: 0))
        #expect(grid.place(time: 2.6 / 4, samples: [3, 4]) == .rows([3, 4], filled: 0))
        // Expected next at 4.6 (row 5); stepped back to 4.4: nearest row 4, which holds sample 4.
        #expect(grid.place(time: 4.4 / 4, samples: [5, 6, 7]) == .rows([6, 7], filled: 0))
        #expect(grid.droppedOverlapping == 1)
        #expect(grid.rows == 7)  // 6 at 5.4 on row 5, 7 at 6.4 on row 6
        // The new phase holds: the next message continues without a drop.
        #expect(grid.place(time: 7.4 / 4, samples: [8]) == .rows([8], filled: 0))
        #expect(grid.droppedOverlapping == 1)
        // A step back of more than a sample still splits.
        #expect(grid.place(time: 6.9 / 4, samples: [9]) == .split)
    }
}
