//! Where boxes go on an allocation's nodes: `--box NAME=NODE` puts a box on a node (the
//! allocation then names those nodes); the other boxes take the allocation's remaining nodes in
//! the card's order.

use crate::fatal::{fatal, Fatal};
use crate::ssh::words::quote;
use std::collections::BTreeMap;

/// Where the ranks go: per rank its box (or `rank N` when none is named) and the boxes `--box`
/// puts on a node.
#[derive(Debug, Clone, Default)]
pub struct NodeMap {
    /// `(rank, box)` in the card's order (for rehash, `(index, box)` of each root).
    pub ranks: Vec<(u32, String)>,
    /// Box -> node, from `--box`.
    pub mapped: BTreeMap<String, String>,
}

impl NodeMap {
    /// The boxes no `--box` places, in the card's order.
    pub fn unmapped(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (_, b) in &self.ranks {
            if !self.mapped.contains_key(b) && !v.contains(b) {
                v.push(b.clone());
            }
        }
        v
    }

    /// The nodes `--box` names, each once.
    pub fn nodelist(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (_, b) in &self.ranks {
            if let Some(n) = self.mapped.get(b).filter(|n| !v.contains(n)) {
                v.push(n.clone());
            }
        }
        v
    }

    /// How many nodes to ask for.
    pub fn count(&self) -> usize {
        self.nodelist().len() + self.unmapped().len()
    }

    /// Box -> node, the unplaced boxes taking the allocation's other nodes in order.
    pub fn assign(&self, nodes: &[String]) -> Result<BTreeMap<String, String>, Fatal> {
        let named = self.nodelist();
        let mut free = nodes.iter().filter(|n| !named.contains(n));
        let mut out = self.mapped.clone();
        for b in self.unmapped() {
            let n = free.next().ok_or_else(|| {
                fatal(format!(
                    "slurm: the allocation's nodes ({}) leave none for box {}",
                    nodes.join(","),
                    quote(&b)
                ))
            })?;
            out.insert(b, n.clone());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_node_map_places_named_boxes_then_the_rest_in_order() {
        let map = NodeMap {
            ranks: vec![
                (0, "a".into()),
                (1, "b".into()),
                (2, "c".into()),
                (3, "b".into()),
            ],
            mapped: BTreeMap::from([("b".to_string(), "n2".to_string())]),
        };
        assert_eq!(map.count(), 3);
        assert_eq!(map.nodelist(), ["n2"]);
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        let got = map.assign(&nodes).unwrap();
        assert_eq!(
            (got["a"].as_str(), got["b"].as_str(), got["c"].as_str()),
            ("n1", "n2", "n3")
        );
        assert!(map.assign(&nodes[..2]).is_err());
    }
}
