/// The variants no other variant beats on both counts: at least as fresh and no dearer, and better on
/// one. What `pushgate forecast --search` recommends from.
public enum ParetoFront {
    /// Indexes of the points on the front (fresher is better, cheaper is better), in input order.
    public static func indices(_ points: [(freshness: Double, cost: Double)]) -> [Int] {
        points.indices.filter { index in
            let point = points[index]
            return !points.contains { other in
                other.freshness >= point.freshness && other.cost <= point.cost
                    && (other.freshness > point.freshness || other.cost < point.cost)
            }
        }
    }
}
